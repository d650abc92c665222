import { threadId } from 'node:worker_threads';
import { pino, type Logger } from 'pino';
import { ClientAssertionVerifier } from '../client_authentication/client_assertion_verifier.js';
import { hashPassword } from '../../core/crypto/password_hash.js';
import { normalizeHtu } from '../dpop/dpop_proof.js';
import { TokenRequestProofs } from '../dpop/token_request_proof.js';
import type { IntrospectionServices } from '../endpoints/introspection.js';
import { IntrospectionThrottle } from '../../core/throttles.js';
import type { RevocationServices } from '../endpoints/revocation.js';
import type { UserInfoServices } from '../endpoints/userinfo.js';
import { ConfigUserPasswordValidator } from '../grants/config_user_validator.js';
import { extensionGrantHandler } from '../grants/extension_grant.js';
import { FailureThrottle } from '../../core/throttles.js';
import type { GrantServices } from '../grants/grant_handler.js';
import { createPasswordGrant, createResourceOwnerAuthenticator, type ResourceOwnerAuthenticator } from '../grants/password.js';
import { GrantRegistry, isGrantHandler } from '../grants/registry.js';
import { ScopeRules } from '../../core/rules/scope_rules.js';
import { UserProfiles } from '../grants/user_profiles.js';
import { registerClients } from '../../core/client_model.js';
import { DPoPNonces } from '../../core/dpop_nonce.js';
import { KeySetCell } from '../../wire/key_set_cell.js';
import { ApiResourceCell } from '../../wire/api_resource_cell.js';
import { StoredApiResources } from './stored_api_resources.js';
import { StoreCommandStats } from '../../wire/store_command_stats.js';
import type {
  ExtensionGrantValidator,
  ProfileServiceClass,
  ResourceOwnerPasswordValidator,
  ValidatorServices,
} from '../../core/validator_api.js';
import type { WorkerBootData } from '../../wire/worker_boot.js';
import { createStore } from '../../core/store/create_store.js';
import type { Store } from '../../core/store/store.js';
import { noteStoreCommand } from '../task_facts_recorder.js';
import { IdTokenBuilder } from '../tokens/id_token.js';
import { IdentityClaims } from '../tokens/identity_claims.js';
import { SigningKeyRing } from '../tokens/signing_key_ring.js';
import { AccessTokenValidator } from '../tokens/token_validator.js';
import { connectMemoryStoreHost } from '../store/memory_store_client.js';
import { ensureTypeScriptLoader, isTypeScriptModule } from '../../core/typescript_loader.js';

/** What the introspection, revocation and UserInfo endpoints read. */
export type EndpointServices = IntrospectionServices & RevocationServices & UserInfoServices;

/**
 * One worker thread, booted: everything that does not change per request, built once at thread
 * start from the gateway's boot data (wire/worker_boot.ts).
 */
export interface BootedWorker {
  readonly boot: WorkerBootData;
  readonly logger: Logger;
  /** The signing keys the gateway publishes (`refresh` before each batch). */
  readonly keyRing: SigningKeyRing;
  /** The store-kept API resources the gateway publishes (`refresh` before each batch). */
  readonly storedResources: StoredApiResources;
  readonly registry: GrantRegistry;
  readonly services: GrantServices;
  readonly endpoints: EndpointServices;
  /** private_key_jwt: the gateway checked the claims; the signature and the jti are checked here. */
  readonly clientAssertions: ClientAssertionVerifier;
  /** DPoP proofs (RFC 9449) at the token endpoint. */
  readonly tokenRequestProofs: TokenRequestProofs;
  /** DPoP proofs at the pushed authorization request endpoint (RFC 9449 §10). */
  readonly pushedRequestProofs: TokenRequestProofs;
  /** The password grant's credential check, which the login pages share (thread/login.ts). */
  readonly authenticateResourceOwner: ResourceOwnerAuthenticator;
}

/** Builds the thread's store, keys, validators, grants and endpoint services. */
export async function bootWorker(boot: WorkerBootData): Promise<BootedWorker> {
  // pid and thread id on every line: an operator can tell which process and thread logged it.
  const logger = pino({ level: boot.logLevel, base: { pid: process.pid, thread: 'worker', threadId } });
  const store = openStore(boot);
  const tokenValidator = new AccessTokenValidator({ issuer: boot.config.issuer, keys: [], store, now: Date.now });
  // Fills the validator's keys at once, and again whenever the gateway publishes a new set.
  const keyRing = new SigningKeyRing(new KeySetCell(boot.keySet), (keys) => tokenValidator.useKeys(keys));
  const scopes = new ScopeRules(boot.config);
  const resourceScopes = new Map<string, ReadonlySet<string>>(boot.config.apiResources.map((r) => [r.name, new Set(r.scopes)]));
  const storedResources = new StoredApiResources(
    boot.apiResources === undefined ? undefined : new ApiResourceCell(boot.apiResources),
    boot.config.apiResources,
    scopes,
    resourceScopes,
  );
  storedResources.refresh();
  const validatorServices = (name: string): ValidatorServices => ({
    tokenValidator,
    logger: logger.child({ validator: name }),
    issuer: boot.config.issuer,
    // Read per use: store-kept resources change while the thread runs.
    get apiResources() {
      return storedResources.current;
    },
  });
  const authenticateResourceOwner = await passwordAuthenticator(boot, store, logger, validatorServices);
  const identityClaims = new IdentityClaims(boot.config);
  const profiles = await loadProfileService(boot, identityClaims, logger, validatorServices);
  const registry = await loadGrants(boot, authenticateResourceOwner, logger, validatorServices);
  // DPoP proofs (RFC 9449): checked here, never on the uWS thread; the nonce key is every gateway's.
  const dpopProofs = {
    store,
    nonces: new DPoPNonces(boot.dpopNonceKey, boot.config.dpop.nonceLifetimeSeconds),
    windowSeconds: boot.config.dpop.proofWindowSeconds,
    now: Date.now,
  };
  const services = grantServices(boot, keyRing, store, logger, profiles, scopes);
  const endpoints: EndpointServices = {
    tokenValidator,
    store,
    now: Date.now,
    introspectionThrottle: new IntrospectionThrottle(store, boot.config.throttling.introspectionInactive),
    resourceScopes,
    identityClaims,
    profiles,
    clients: services.clients,
    dpopProofs,
    revocationProofs: new TokenRequestProofs(boot.config.issuer, boot.config.dpop, dpopProofs, '/connect/revocation'),
    userInfoHtu: normalizeHtu(`${boot.config.issuer}/connect/userinfo`),
  };
  return {
    boot,
    logger,
    keyRing,
    storedResources,
    registry,
    services,
    endpoints,
    clientAssertions: new ClientAssertionVerifier(store),
    tokenRequestProofs: new TokenRequestProofs(boot.config.issuer, boot.config.dpop, dpopProofs),
    pushedRequestProofs: new TokenRequestProofs(boot.config.issuer, boot.config.dpop, dpopProofs, '/connect/par'),
    authenticateResourceOwner,
  };
}

/** With the memory store: this thread's bridge to the main thread's one. */
function openStore(boot: WorkerBootData): Store {
  const storeStats = new StoreCommandStats(boot.storeStats);
  return createStore(boot.config.store, {
    connectMemoryHost: connectMemoryStoreHost,
    observe: boot.recordTiming
      ? (command, seconds, failed) => {
          storeStats.record(command, seconds, failed);
          noteStoreCommand(command, seconds, failed);
        }
      : storeStats.record,
  });
}

/** The password grant: a custom credential check from validatorsDir, or the configured users. */
async function passwordAuthenticator(
  boot: WorkerBootData,
  store: Store,
  logger: Logger,
  validatorServices: (name: string) => ValidatorServices,
): Promise<ResourceOwnerAuthenticator> {
  let passwordValidator: ResourceOwnerPasswordValidator;
  if (boot.passwordValidatorModule !== null) {
    const url = boot.passwordValidatorModule;
    if (isTypeScriptModule(url)) ensureTypeScriptLoader();
    const { default: Validator } = (await import(url)) as { default: new (s: ValidatorServices) => ResourceOwnerPasswordValidator };
    passwordValidator = new Validator(validatorServices(moduleName(url)));
  } else {
    // Hashed once per thread with the same cost as real hashes: verified when no user matches.
    passwordValidator = new ConfigUserPasswordValidator(boot.config.users, await hashPassword('dummy password for unknown users'));
  }
  return createResourceOwnerAuthenticator(passwordValidator, {
    throttle: new FailureThrottle(store, 'pwd', boot.config.throttling.password),
    addressThrottle: new FailureThrottle(store, 'pwd-addr', boot.config.throttling.passwordPerAddress),
    userThrottle: new FailureThrottle(store, 'pwd-user', boot.config.throttling.passwordPerUser),
    timeoutMs: boot.config.validatorTimeoutMs,
    logger,
  });
}

/** The profile service (users' claims and whether they are active), when validatorsDir has one. */
async function loadProfileService(
  boot: WorkerBootData,
  identityClaims: IdentityClaims,
  logger: Logger,
  validatorServices: (name: string) => ValidatorServices,
): Promise<UserProfiles | undefined> {
  if (typeof boot.profileServiceModule !== 'string') return undefined;
  const url = boot.profileServiceModule;
  if (isTypeScriptModule(url)) ensureTypeScriptLoader();
  const { default: ProfileService } = (await import(url)) as { default: ProfileServiceClass };
  return new UserProfiles(new ProfileService(validatorServices(moduleName(url))), identityClaims, {
    timeoutMs: boot.config.validatorTimeoutMs,
    logger: logger.child({ profileService: moduleName(url) }),
    source: url,
  });
}

/** Every built-in grant, then the internal grant modules (tests), then the extension grants. */
async function loadGrants(
  boot: WorkerBootData,
  authenticateResourceOwner: ResourceOwnerAuthenticator,
  logger: Logger,
  validatorServices: (name: string) => ValidatorServices,
): Promise<GrantRegistry> {
  const registry = new GrantRegistry({ password: createPasswordGrant(authenticateResourceOwner) });
  for (const url of boot.grantModules) {
    const module = (await import(url)) as { default?: unknown };
    if (!isGrantHandler(module.default)) throw new Error(`grant module ${url} has no GrantHandler default export`);
    registry.register(module.default);
  }
  // The gateway already checked these modules; here each worker builds its own instances.
  for (const url of boot.validatorModules) {
    if (isTypeScriptModule(url)) ensureTypeScriptLoader();
    const { default: Validator } = (await import(url)) as { default: new (s: ValidatorServices) => ExtensionGrantValidator };
    const validator = new Validator(validatorServices(moduleName(url)));
    registry.register(
      extensionGrantHandler(validator, {
        timeoutMs: boot.config.validatorTimeoutMs,
        logger: logger.child({ validator: moduleName(url) }),
        source: url,
      }),
    );
  }
  return registry;
}

function grantServices(
  boot: WorkerBootData,
  keyRing: SigningKeyRing,
  store: Store,
  logger: Logger,
  profiles: UserProfiles | undefined,
  scopes: ScopeRules,
): GrantServices {
  let idTokens: IdTokenBuilder | undefined;
  return {
    issuer: boot.config.issuer,
    clients: registerClients(boot.config.clients),
    scopes,
    // Read per token: the ring swaps it when the next key activates or the set changes.
    get signer() {
      return keyRing.signer;
    },
    // Built on first use: a worker may start before the store-kept keys are loaded (no signer yet).
    get idTokens() {
      idTokens ??= new IdTokenBuilder(boot.config, boot.config.issuer, keyRing.signer.alg);
      return idTokens;
    },
    store,
    now: Date.now,
    logger,
    profiles,
  };
}

function moduleName(url: string): string {
  return url.slice(url.lastIndexOf('/') + 1);
}
