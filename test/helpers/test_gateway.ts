import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import type { Test } from 'tap';
import { validateConfig, type LoadedConfig } from '../../gateway/config/load.js';
import { startGateway, type ReloadResult, type RunningGateway, type StartOptions } from '../../gateway/start/server.js';
import { listValidatorFiles, peekGrantTypes } from '../../gateway/validators/validator_loader.js';
import { freePort } from './free_port.js';
import { generateSigningKey } from '../../gateway/keys/key_loader.js';
import type { SigningKeyMaterial } from '../../core/signing_key.js';

export const sha256Secret = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('base64');

/** The RFC 6749 Appendix B client: both parts need form-encoding before Basic. */
export const appendixB = { clientId: 'an:identifier', secret: 'some secure & non-standard secret' } as const;

/** A small config with one client per authentication case; tests patch it as they need. */
export function baseTestConfig(): Record<string, unknown> {
  return {
    issuer: 'http://127.0.0.1:5000',
    listen: { host: '127.0.0.1', port: 0 },
    store: { type: 'memory' },
    workers: { threads: 1 },
    // A free port: test gateways run side by side.
    management: { host: '127.0.0.1', port: 0 },
    logLevel: 'silent',
    identityResources: [
      { name: 'openid', claims: ['sub'] },
      { name: 'profile', claims: ['name'] },
    ],
    apiScopes: [{ name: 'api1' }, { name: 'api2' }],
    apiResources: [
      { name: 'urn:api1', scopes: ['api1'] },
      { name: 'urn:api2', scopes: ['api2'] },
    ],
    clients: [
      {
        clientId: 'm2m',
        clientSecrets: [{ value: sha256Secret('secret') }],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1', 'api2'],
        claims: [{ type: 'tier', value: 'gold' }],
        accessTokenLifetime: 600,
      },
      {
        clientId: appendixB.clientId,
        clientSecrets: [{ value: sha256Secret(appendixB.secret) }],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
      },
      {
        clientId: 'rolling',
        clientSecrets: [{ value: sha256Secret('expired'), expiration: '2020-01-01T00:00:00Z' }, { value: sha256Secret('current') }],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
      },
      {
        clientId: 'disabled',
        enabled: false,
        clientSecrets: [{ value: sha256Secret('secret') }],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
      },
      {
        clientId: 'public-cc',
        requireClientSecret: false,
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api2'],
      },
      {
        clientId: 'user-app',
        clientSecrets: [{ value: sha256Secret('secret') }],
        allowedGrantTypes: ['password'],
        allowedScopes: ['openid', 'api1'],
      },
      {
        clientId: 'identity-only',
        clientSecrets: [{ value: sha256Secret('secret') }],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['openid'],
      },
    ],
  };
}

export interface TestGateway extends RunningGateway {
  readonly config: LoadedConfig;
  /** `${url}/connect/token` */
  readonly tokenUrl: string;
  /** Reloads the config as SIGHUP would, built again with `patch` applied after the start patch. */
  reloadWith(patch: (raw: Record<string, unknown>) => void): Promise<ReloadResult>;
}

export interface TestGatewayOptions {
  patch?: (raw: Record<string, unknown>) => void;
  grantModules?: string[];
  extraGrantTypes?: string[];
  /**
   * Validator modules (absolute paths or file URLs), as `addExtensionGrantValidator` adds them.
   * Their grant types count as known to config validation, as with `tessera start`.
   */
  validatorModules?: string[];
  /** An absolute `validatorsDir`; its modules' grant types count as known too. */
  validatorsDir?: string;
  /** Hot reload of `validatorsDir` (the gateway's default: on). */
  watchValidators?: boolean;
  /** The main thread's logger (default: a silent one from the config). */
  logger?: Logger;
  /** The embedding API's audit-event hook. */
  onEvent?: StartOptions['onEvent'];
  /** Where trace spans go when the config turns tracing on. */
  spanProcessor?: StartOptions['spanProcessor'];
}

/** Starts a real gateway on a free port; stopped when the test ends. */
export async function startTestGateway(t: Test, options: TestGatewayOptions = {}): Promise<TestGateway> {
  // A port drawn free can still be taken by another test file's server before this gateway
  // listens (files run side by side): the gateway refuses it, and another port is drawn.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startTestGatewayOnce(t, options);
    } catch (err) {
      if (attempt === 3 || !String((err as Error).message).includes('the port is in use')) throw err;
    }
  }
}

async function startTestGatewayOnce(t: Test, options: TestGatewayOptions): Promise<TestGateway> {
  const raw = baseTestConfig();
  // The issuer must be where the gateway listens, for discovery-driven clients.
  const port = await freePort();
  raw.issuer = `http://127.0.0.1:${port}`;
  raw.listen = { host: '127.0.0.1', port };
  if (options.validatorsDir !== undefined) raw.validatorsDir = options.validatorsDir;
  options.patch?.(raw);
  // Not t.testdir(): a test may use its own testdir for key files.
  const devKeyDir = mkdtempSync(path.join(tmpdir(), 'tessera-test-'));
  t.teardown(() => rmSync(devKeyDir, { recursive: true, force: true }));
  // Like the service builder: grant types of the validators to load are known to the config.
  const validatorUrls = [
    ...(options.validatorsDir !== undefined ? await listValidatorFiles(options.validatorsDir) : []),
    ...(options.validatorModules ?? []),
  ].map((m) => (m.startsWith('file:') ? m : pathToFileURL(m).href));
  const validatorGrantTypes = validatorUrls.length > 0 ? await peekGrantTypes(validatorUrls, options.validatorsDir) : [];
  const validate = (document: Record<string, unknown>, served: readonly string[] = []) =>
    validateConfig(document, {
      configDir: devKeyDir,
      env: {},
      extraGrantTypes: [...(options.extraGrantTypes ?? []), ...validatorGrantTypes, ...served],
    });
  const config = validate(raw);
  let reloadPatch: (raw: Record<string, unknown>) => void = () => {};
  const startOptions: StartOptions = {
    config,
    devKeyDir,
    reloadConfig: async (served) => {
      const next = structuredClone(raw);
      reloadPatch(next);
      return validate(next, served);
    },
  };
  if (options.grantModules) startOptions.grantModules = options.grantModules;
  if (options.validatorModules) startOptions.validatorModules = options.validatorModules;
  if (options.watchValidators !== undefined) startOptions.watchValidators = options.watchValidators;
  if (options.logger !== undefined) startOptions.logger = options.logger;
  if (options.onEvent !== undefined) startOptions.onEvent = options.onEvent;
  if (options.spanProcessor !== undefined) startOptions.spanProcessor = options.spanProcessor;
  const gateway = await startGateway(startOptions);
  t.teardown(() => gateway.stop());
  // Delegates rather than spreads: `grantTypes` is a getter that follows validator reloads.
  return {
    url: gateway.url,
    port: gateway.port,
    managementUrl: gateway.managementUrl,
    events: gateway.events,
    metrics: gateway.metrics,
    get grantTypes() {
      return gateway.grantTypes;
    },
    nextValidatorReload: () => gateway.nextValidatorReload(),
    reloadKeys: (next) => gateway.reloadKeys(next),
    stop: (stopOptions) => gateway.stop(stopOptions),
    get config() {
      return gateway.config;
    },
    reload: () => gateway.reload(),
    reloadWith(patch) {
      reloadPatch = patch;
      return gateway.reload();
    },
    tokenUrl: `${gateway.url}/connect/token`,
  };
}

/**
 * A configured ES256 key written into the test's folder, so a test can sign tokens the gateway
 * accepts (an expired one, say). Put `signing` into the config patch.
 */
export async function writeSigningKey(
  t: Test,
): Promise<{ key: SigningKeyMaterial; signing: { algorithm: 'ES256'; keys: { file: string }[] } }> {
  const key = await generateSigningKey('ES256');
  const file = path.join(t.testdir(), 'signing-key.jwk.json');
  writeFileSync(file, JSON.stringify(key.jwk));
  return { key, signing: { algorithm: 'ES256', keys: [{ file }] } };
}
