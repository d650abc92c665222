/**
 * Piscina worker entry: validates grants and signs tokens for batches of token requests.
 * Everything that does not change per request is built once here, at thread start.
 */
import { threadId } from 'node:worker_threads';
import { move, workerData } from 'piscina';
import { pino } from 'pino';
import { isStoreUnavailable, type Store } from './store/store.js';
import { createStore } from './store/create_store.js';
import { registerClients } from './protocol/client_model.js';
import { OAuthError, OAuthErrors } from './protocol/oauth_errors.js';
import {
  errorResult,
  packMessage,
  successResult,
  unpackTaskItems,
  type LoginItem,
  type TaskItem,
  type TokenItem,
  type TokenTaskResult,
} from './protocol/token_task.js';
import { introspect } from './endpoints/introspection.js';
import { IntrospectionThrottle } from './store/throttles.js';
import { revoke } from './endpoints/revocation.js';
import { userInfo } from './endpoints/userinfo.js';
import type { WorkerBootData } from './protocol/worker_boot.js';
import {
  BatchState,
  claimBatch,
  heartbeatIntervalMs,
  heartbeatSlot,
  isBatchTask,
  stateSlot,
  type BatchTask,
} from './protocol/batch_control.js';
import { GrantRegistry, isGrantHandler } from './grants/registry.js';
import type { GrantServices } from './grants/grant_handler.js';
import { ScopeRules, userPolicy } from './grants/scope_rules.js';
import { KeySetCell } from './protocol/key_set_cell.js';
import { SigningKeyRing } from './tokens/signing_key_ring.js';
import { IdTokenBuilder } from './tokens/id_token.js';
import { IdentityClaims } from './tokens/identity_claims.js';
import { AccessTokenValidator } from './tokens/token_validator.js';
import { extensionGrantHandler, validatorApiResources } from './grants/extension_grant.js';
import type {
  ExtensionGrantValidator,
  ProfileServiceClass,
  ResourceOwnerPasswordValidator,
  ValidatorServices,
} from './protocol/validator_api.js';
import { UserProfiles } from './grants/user_profiles.js';
import { ConfigUserPasswordValidator } from './grants/config_user_validator.js';
import { FailureThrottle } from './store/throttles.js';
import { createPasswordGrant, createResourceOwnerAuthenticator } from './grants/password.js';
import { hashPassword } from './crypto/password_hash.js';
import { ensureTypeScriptLoader, isTypeScriptModule } from './typescript_loader.js';
import { noteStoreCommand, timingStoreCommands } from './task_facts_recorder.js';
import { StoreCommandStats } from './protocol/store_command_stats.js';
import type { TaskFacts } from './protocol/task_facts.js';
import { ClientAssertionVerifier } from './client_authentication/client_assertion_verifier.js';
import { DPoPNonces } from './protocol/dpop_nonce.js';
import { TokenRequestProofs } from './dpop/token_request_proof.js';
import { normalizeHtu } from './dpop/dpop_proof.js';

const boot = workerData as WorkerBootData;
// pid and thread id on every line: an operator can tell which process and thread logged it.
const logger = pino({ level: boot.logLevel, base: { pid: process.pid, thread: 'worker', threadId } });

// With the memory store: this thread's bridge to the main thread's one.
const storeStats = new StoreCommandStats(boot.storeStats);
const store: Store = createStore(boot.config.store, {
  observe: boot.recordTiming
    ? (command, seconds, failed) => {
        storeStats.record(command, seconds, failed);
        noteStoreCommand(command, seconds, failed);
      }
    : storeStats.record,
});

const tokenValidator = new AccessTokenValidator({ issuer: boot.config.issuer, keys: [], store, now: Date.now });
// Fills the validator's keys at once, and again whenever the gateway publishes a new set.
const keyRing = new SigningKeyRing(new KeySetCell(boot.keySet), (keys) => tokenValidator.useKeys(keys));
const apiResources = validatorApiResources(boot.config);
const validatorServices = (name: string): ValidatorServices => ({
  tokenValidator,
  logger: logger.child({ validator: name }),
  issuer: boot.config.issuer,
  apiResources,
});

// The password grant: a custom credential check from validatorsDir, or the configured users.
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
const authenticateResourceOwner = createResourceOwnerAuthenticator(passwordValidator, {
  throttle: new FailureThrottle(store, 'pwd', boot.config.throttling.password),
  addressThrottle: new FailureThrottle(store, 'pwd-addr', boot.config.throttling.passwordPerAddress),
  userThrottle: new FailureThrottle(store, 'pwd-user', boot.config.throttling.passwordPerUser),
  timeoutMs: boot.config.validatorTimeoutMs,
  logger,
});

// The profile service (users' claims and whether they are active), when validatorsDir has one.
const identityClaims = new IdentityClaims(boot.config);
let profiles: UserProfiles | undefined;
if (typeof boot.profileServiceModule === 'string') {
  const url = boot.profileServiceModule;
  if (isTypeScriptModule(url)) ensureTypeScriptLoader();
  const { default: ProfileService } = (await import(url)) as { default: ProfileServiceClass };
  profiles = new UserProfiles(new ProfileService(validatorServices(moduleName(url))), identityClaims, {
    timeoutMs: boot.config.validatorTimeoutMs,
    logger: logger.child({ profileService: moduleName(url) }),
    source: url,
  });
}

// Every built-in grant, then the internal grant modules (tests), then the extension grants.
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

// DPoP proofs (RFC 9449): checked here, never on the uWS thread; the nonce key is every gateway's.
const dpopProofServices = {
  store,
  nonces: new DPoPNonces(boot.dpopNonceKey, boot.config.dpop.nonceLifetimeSeconds),
  windowSeconds: boot.config.dpop.proofWindowSeconds,
  now: Date.now,
};
const tokenRequestProofs = new TokenRequestProofs(boot.config.issuer, boot.config.dpop, dpopProofServices);
const revocationProofs = new TokenRequestProofs(boot.config.issuer, boot.config.dpop, dpopProofServices, '/connect/revocation');

let idTokens: IdTokenBuilder | undefined;
const services: GrantServices = {
  issuer: boot.config.issuer,
  clients: registerClients(boot.config.clients),
  scopes: new ScopeRules(boot.config),
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

function moduleName(url: string): string {
  return url.slice(url.lastIndexOf('/') + 1);
}

const serverError: TokenTaskResult = errorResult(OAuthErrors.serverError);
// Marked, so that the gateway logs a store outage once rather than once per request.
const storeFailed: TaskFacts = Object.freeze({ storeUnavailable: true as const });
const storeUnavailable: TokenTaskResult = [
  OAuthErrors.temporarilyUnavailable.status,
  OAuthErrors.temporarilyUnavailable.body,
  2,
  OAuthErrors.temporarilyUnavailable.error,
  storeFailed,
];

// private_key_jwt: the gateway checked the claims; the signature and the jti are checked here.
const clientAssertions = new ClientAssertionVerifier(store);

const endpointServices = {
  tokenValidator,
  store,
  now: Date.now,
  introspectionThrottle: new IntrospectionThrottle(store, boot.config.throttling.introspectionInactive),
  resourceScopes: new Map(boot.config.apiResources.map((r) => [r.name, new Set(r.scopes)])),
  identityClaims,
  profiles,
  clients: services.clients,
  dpopProofs: dpopProofServices,
  revocationProofs,
  userInfoHtu: normalizeHtu(`${boot.config.issuer}/connect/userinfo`),
};

/** One request's answer, with what its audit events need when the gateway asked for it. */
async function answerItem(item: TaskItem): Promise<TokenTaskResult> {
  if (!boot.recordFacts) return handleItem(item, undefined);
  const facts: TaskFacts = {};
  const result = boot.recordTiming ? await timingStoreCommands(facts, () => handleItem(item, facts)) : await handleItem(item, facts);
  // A store failure's answer carries its own (shared) facts: keep what was learned before it.
  if (result.length === 5)
    return result[4] === storeFailed ? [result[0], result[1], result[2], result[3], { ...facts, storeUnavailable: true }] : result;
  return Object.keys(facts).length === 0 ? result : [result[0], result[1], result[2], result[3], facts];
}

async function handleItem(item: TaskItem, facts: TaskFacts | undefined): Promise<TokenTaskResult> {
  try {
    // Client authentication comes before anything else the request does (RFC 6749 §3.2.1).
    if (item.kind !== 'login' && item.kind !== 'userinfo' && item.clientAssertion !== undefined) {
      await clientAssertions.verify(item.kind === 'introspection' ? item.callerId : item.clientId, item.clientAssertion);
    }
    switch (item.kind) {
      case 'client_assertion':
        return successResult('');
      case 'token':
        return await handleTokenRequest(item, facts);
      case 'introspection':
        return successResult(await introspect(item.caller, item.callerId, item.params, endpointServices));
      case 'revocation':
        await revoke(item.clientId, item.params, endpointServices, facts, item.dpop);
        return successResult('');
      case 'login':
        return await handleLogin(item, facts);
      case 'userinfo':
        return await userInfo(item, endpointServices);
      default: {
        const unknown: never = item;
        logger.error({ kind: (unknown as { kind?: unknown }).kind }, 'task for an unknown endpoint');
        return serverError;
      }
    }
  } catch (err) {
    const request = describeItem(item);
    if (err instanceof OAuthError) {
      if (err.detail !== undefined) logger.info({ ...request, detail: err.detail }, 'request rejected');
      return errorResult(err, err.retryAfter ?? null);
    }
    if (isStoreUnavailable(err)) {
      // The gateway logs the outage once with a count (docs/operations.md, "Logs").
      logger.debug(request, 'store unavailable');
      return storeUnavailable;
    }
    logger.error({ ...request, err }, 'request handler failed');
    return serverError;
  }
}

/** What the logs say about a request: never its parameters (passwords, tokens). */
function describeItem(item: TaskItem): Record<string, string> {
  switch (item.kind) {
    case 'token':
      return { kind: item.kind, grantType: item.grantType, clientId: item.clientId };
    case 'introspection':
      return { kind: item.kind, caller: item.caller, callerId: item.callerId };
    case 'userinfo':
      return { kind: item.kind };
    default:
      return { kind: item.kind, clientId: item.clientId };
  }
}

// The login pages' credential check: the password grant's, so both share validator and throttle.
async function handleLogin({ clientId, params, address }: LoginItem, facts: TaskFacts | undefined): Promise<TokenTaskResult> {
  const client = services.clients.get(clientId);
  if (client === undefined) return serverError;
  const request = { grantType: 'authorization_code', client, params, address, facts };
  const scopes = services.scopes.resolve(client, params.scope, userPolicy);
  const user = await authenticateResourceOwner(request, services, scopes);
  return successResult(JSON.stringify(user));
}

async function handleTokenRequest(
  { grantType, clientId, params, address, dpop }: TokenItem,
  facts: TaskFacts | undefined,
): Promise<TokenTaskResult> {
  const handler = registry.get(grantType);
  const client = services.clients.get(clientId);
  if (handler === undefined || client === undefined) {
    logger.error({ grantType }, 'token task for an unknown grant type or client');
    return serverError;
  }
  // RFC 9449 §5: the proof first; the grant then binds its tokens to the proof's key.
  const jkt = dpop === undefined ? undefined : await tokenRequestProofs.keyOf(dpop, client);
  const response = await handler.handle({ grantType, client, params, address, jkt, facts }, services);
  return successResult(JSON.stringify(response));
}

// The control blocks of the batches this thread runs now; their heartbeats move together, and
// stop together when something blocks the thread (workers/protocol/batch_control.ts).
const running = new Set<Int32Array>();
let heartbeat: NodeJS.Timeout | undefined;

function beat(): void {
  for (const control of running) Atomics.add(control, heartbeatSlot, 1);
}

function track(control: Int32Array): void {
  running.add(control);
  heartbeat ??= setInterval(beat, heartbeatIntervalMs);
}

function untrack(control: Int32Array): void {
  running.delete(control);
  Atomics.store(control, stateSlot, BatchState.finished);
  if (running.size === 0 && heartbeat !== undefined) {
    clearInterval(heartbeat);
    heartbeat = undefined;
  }
}

/**
 * One Piscina task: a packed batch of token requests in, a packed batch of answers out. The
 * gateway's batches carry a control block; the boot check's empty batch comes bare.
 */
export default async function runTokenBatch(task: BatchTask | Uint8Array): Promise<unknown> {
  keyRing.refresh(Date.now());
  if (!isBatchTask(task)) return move(packMessage(await Promise.all(unpackTaskItems(task).map(answerItem))));
  const control = new Int32Array(task.control);
  // Withdrawn while this thread was busy: the gateway sent its requests to another thread.
  if (!claimBatch(control, threadId)) return move(packMessage([]));
  track(control);
  try {
    const items = unpackTaskItems(task.batch);
    const results = await Promise.all(items.map(answerItem));
    return move(packMessage(results));
  } finally {
    untrack(control);
  }
}
