import { pathToFileURL } from 'node:url';
import { Piscina } from 'piscina';
import { pino, type Logger } from 'pino';
import * as uWS from 'uWebSockets.js';
import { isGrantHandler } from '../workers/grants/registry.js';
import { registerClients } from '../workers/protocol/client_model.js';
import { OAuthErrors } from '../workers/protocol/oauth_errors.js';
import type { WorkerBootData } from '../workers/protocol/worker_boot.js';
import { createStore } from '../workers/store/create_store.js';
import type { Store } from '../workers/store/store.js';
import type { SigningKeyMaterial } from '../workers/protocol/signing_key.js';
import { ClientAuthenticator } from './client_authentication/authenticator.js';
import { ClientAuthThrottle, FailureThrottle } from './client_authentication/throttle.js';
import type { ConfigError } from './config/config_error.js';
import type { LoadedConfig } from './config/load.js';
import { builtInGrantTypes } from '../workers/protocol/grant_types.js';
import { workerConfigOf } from './config/worker_config.js';
import { buildDiscoveryDocument, buildJwksDocument, discoveryPath, jwksPath } from './discovery.js';
import { Exchange } from './http/exchange.js';
import { loadSigningKeys } from './key_loader.js';
import { GatewayMetrics } from './metrics.js';
import { createTokenEndpoint } from './token_endpoint.js';
import { registerAuthorizeEndpoint } from './pages/authorize_endpoint.js';
import { registerDeviceEndpoint } from './pages/device_endpoint.js';
import { createDeviceAuthorizationEndpoint, deviceAuthorizationPath } from './device_authorization_endpoint.js';
import { PageSecrets } from './pages/session.js';
import { ScopeRules } from '../workers/grants/scope_rules.js';
import { createIntrospectionEndpoint } from './introspection_endpoint.js';
import { createRevocationEndpoint } from './revocation_endpoint.js';
import { loadValidatorModules, type ValidatorModule } from './validator_loader.js';
import { watchValidators } from './validator_watcher.js';
import { MemoryStoreHost } from './store/memory_store_host.js';
import { WorkerDispatcher } from './worker_dispatcher.js';

export interface StartOptions {
  config: LoadedConfig;
  logger?: Logger;
  /**
   * Extra grant-handler modules (URLs or absolute paths) whose default export is a `GrantHandler`.
   * They join the same registry as the built-in grants, in every worker.
   */
  grantModules?: readonly string[];
  /** Extension-grant validator modules beyond those in `validatorsDir` (the builder's `addExtensionGrantValidator`). */
  validatorModules?: readonly string[];
  /** Reload validators when files in `validatorsDir` change (default true). */
  watchValidators?: boolean;
  /** Where the development key file lives on the memory store; defaults to `./.tessera`. */
  devKeyDir?: string;
}

export interface RunningGateway {
  /** Base URL the gateway listens on, e.g. http://127.0.0.1:5000 */
  readonly url: string;
  readonly port: number;
  /** The grant types served right now (changes when validators reload). */
  readonly grantTypes: readonly string[];
  /** Resolves after the next validator reload attempt: `true` when it took effect. */
  nextValidatorReload(): Promise<boolean>;
  /** Graceful stop: stop accepting, finish in-flight requests, close the pool and the store. */
  stop(): Promise<void>;
}

// The worker entry sits beside this file's compiled twin; from TypeScript sources (tests) a small
// shim registers tsx in the worker first.
const workerFile = new URL(
  import.meta.url.endsWith('.ts') ? '../workers/worker_from_source.mjs' : '../workers/worker.js',
  import.meta.url,
);

const drainTimeoutMs = 10_000;

/** Starts one gateway: store, keys, validators, worker pool, then the HTTP listener. */
export async function startGateway(options: StartOptions): Promise<RunningGateway> {
  const { config } = options;
  const logger = options.logger ?? pino({ level: config.logLevel });

  const store: Store = createStore(config.store);
  // The memory store lives on this thread; each worker reaches it over a port of its own.
  const storeHost = config.store.type === 'memory' ? new MemoryStoreHost(store) : null;

  let pool: Piscina | undefined;
  let stopWatching = (): void => {};
  try {
    const keys = await loadSigningKeys(config, store, logger, options.devKeyDir);

    const grantModules = (options.grantModules ?? []).map(toModuleUrl);
    const internalGrantTypes: string[] = [];
    for (const url of grantModules) {
      const module = (await import(url)) as { default?: unknown };
      if (!isGrantHandler(module.default)) throw new Error(`${url}: default export is not a grant handler`);
      internalGrantTypes.push(module.default.grantType);
    }
    const reservedGrantTypes = [...new Set([...builtInGrantTypes, ...internalGrantTypes])];

    // Validators are checked here once (exit 2 on a bad module) before every worker loads them.
    const validatorSources = { dir: config.validatorsDir, modules: (options.validatorModules ?? []).map(toModuleUrl) };
    let validators = await loadValidatorModules(validatorSources, reservedGrantTypes);

    const threads = config.workers.threads;
    const newPool = (modules: readonly ValidatorModule[]): Promise<Piscina> =>
      startPool({
        config,
        keys,
        grantModules,
        validatorModules: modules.filter((m) => m.kind === 'extension_grant').map((m) => m.url),
        passwordValidatorModule: modules.find((m) => m.kind === 'resource_owner_password')?.url ?? null,
        storeHost,
        threads,
      });
    pool = await newPool(validators);
    let grantTypes = grantTypesOf(internalGrantTypes, validators);

    // The dispatcher and the metrics refer to each other: in-flight count one way, batch sizes the other.
    let metrics: GatewayMetrics | undefined;
    const dispatcher = new WorkerDispatcher(pool, { threads, maxQueue: config.workers.maxQueue, logger, onBatch: (size) => metrics?.observeBatch(size) });
    metrics = new GatewayMetrics(() => dispatcher.pending);
    const clients = registerClients(config.clients);
    const resourceNames = new Set(config.apiResources.map((r) => r.name));
    // One authenticator and one throttle for every endpoint that authenticates clients.
    const clientAuthentication = {
      issuer: config.issuer,
      authenticator: new ClientAuthenticator(clients),
      throttle: new ClientAuthThrottle(
        new FailureThrottle(store, 'client', config.throttling.clientAuthentication),
        // API resources authenticate at introspection and are throttled the same way.
        (id) => clients.has(id) || resourceNames.has(id),
        logger,
      ),
    };
    const tokenEndpoint = createTokenEndpoint({
      ...clientAuthentication,
      grantTypes: () => grantTypes,
      dispatcher,
      observe: metrics.countTokenResponse,
    });
    let discoveryBody = buildDiscoveryDocument(config, [...grantTypes], keys);
    const jwksBody = buildJwksDocument(keys);

    const app = uWS.App();
    app.any('/connect/token', tokenEndpoint);
    const firstKey = keys[0] as SigningKeyMaterial;
    const scopeRules = new ScopeRules(config);
    // Keys for cookies and CSRF tokens are derived from the signing key every instance shares.
    const pageSecrets = new PageSecrets(`${firstKey.kid}:${String(firstKey.jwk.d)}`, config.issuer.startsWith('https:'), config.sessionLifetimeSeconds * 1000);
    registerAuthorizeEndpoint(app, { config, clients, scopes: scopeRules, secrets: pageSecrets, dispatcher, store });
    registerDeviceEndpoint(app, { config, clients, secrets: pageSecrets, dispatcher, store });
    app.any(deviceAuthorizationPath, createDeviceAuthorizationEndpoint({ ...clientAuthentication, scopes: scopeRules, store }));
    app.any('/connect/introspect', createIntrospectionEndpoint({ ...clientAuthentication, apiResources: config.apiResources, dispatcher }));
    app.any('/connect/revocation', createRevocationEndpoint({ ...clientAuthentication, dispatcher }));
    app.any(discoveryPath, getOnly((ex) => ex.sendStatic(200, 'application/json; charset=utf-8', discoveryBody, 'public, max-age=300')));
    app.any(jwksPath, getOnly((ex) => ex.sendStatic(200, 'application/jwk-set+json', jwksBody, 'public, max-age=300')));
    app.any('/healthz', getOnly((ex) => ex.sendStatic(200, 'application/json', '{"status":"ok"}', 'no-store')));
    app.any(
      '/readyz',
      getOnly((ex) => {
        checkReady(store, dispatcher.currentPool, keys.length).then(
          (problems) =>
            problems.length === 0
              ? ex.sendStatic(200, 'application/json', '{"status":"ready"}', 'no-store')
              : ex.sendStatic(503, 'application/json', JSON.stringify({ status: 'not_ready', problems }), 'no-store'),
          () => ex.sendStatic(503, 'application/json', '{"status":"not_ready"}', 'no-store'),
        );
      }),
    );
    app.any(
      '/metrics',
      getOnly((ex) => {
        metrics.registry.metrics().then(
          (text) => ex.sendStatic(200, metrics.registry.contentType, text, 'no-store'),
          () => ex.sendStatic(500, 'text/plain', 'metrics unavailable', 'no-store'),
        );
      }),
    );
    app.any('/*', (res) => {
      new Exchange(res).sendStatic(404, 'application/json', '{"error":"not_found"}', 'no-store');
    });

    // Hot reload (SPEC §6): a new set is checked in full, then served by a fresh pool while the old
    // pool finishes what it has. A broken file leaves the previous set in service.
    let reloadWaiters: ((applied: boolean) => void)[] = [];
    const settleReload = (applied: boolean): void => {
      const waiters = reloadWaiters;
      reloadWaiters = [];
      for (const resolve of waiters) resolve(applied);
    };
    const reloadValidators = async (): Promise<void> => {
      let next: ValidatorModule[];
      try {
        next = await loadValidatorModules(validatorSources, reservedGrantTypes);
      } catch (err) {
        const problems = (err as Partial<ConfigError>).problems ?? [{ path: config.validatorsDir, message: String(err) }];
        logger.error({ problems }, 'validator reload refused; the previous validators stay in service');
        settleReload(false);
        return;
      }
      const change = describeChange(validators, next);
      if (change === undefined) {
        settleReload(false);
        return;
      }
      try {
        await dispatcher.replacePool(await newPool(next));
      } catch (err) {
        logger.error({ err }, 'validator reload could not start workers; the previous validators stay in service');
        settleReload(false);
        return;
      }
      validators = next;
      grantTypes = grantTypesOf(internalGrantTypes, validators);
      discoveryBody = buildDiscoveryDocument(config, [...grantTypes], keys);
      logger.info(change, 'validators reloaded');
      settleReload(true);
    };
    if (options.watchValidators !== false) stopWatching = watchValidators(config.validatorsDir, reloadValidators, logger);

    const host = config.listen.host;
    const listenSocket = await new Promise<uWS.us_listen_socket>((resolve, reject) => {
      app.listen(host, config.listen.port, (socket) => {
        if (socket === false) reject(new Error(`cannot listen on ${host}:${config.listen.port}`));
        else resolve(socket);
      });
    });
    const port = uWS.us_socket_local_port(listenSocket as unknown as uWS.us_socket);
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    logger.info({ url, issuer: config.issuer, threads, store: config.store.type, grantTypes: [...grantTypes] }, 'tessera listening');

    let stopping: Promise<void> | undefined;
    return {
      url,
      port,
      get grantTypes() {
        return [...grantTypes];
      },
      nextValidatorReload() {
        return new Promise<boolean>((resolve) => reloadWaiters.push(resolve));
      },
      stop() {
        stopping ??= (async () => {
          stopWatching();
          settleReload(false);
          uWS.us_listen_socket_close(listenSocket);
          await Promise.race([dispatcher.drain(), delay(drainTimeoutMs)]);
          app.close();
          await dispatcher.currentPool.destroy();
          storeHost?.close();
          await store.close();
          logger.info('tessera stopped');
        })();
        return stopping;
      },
    };
  } catch (err) {
    stopWatching();
    await pool?.destroy().catch(() => {});
    storeHost?.close();
    await store.close().catch(() => {});
    throw err;
  }
}

interface PoolInputs {
  config: LoadedConfig;
  keys: readonly SigningKeyMaterial[];
  grantModules: readonly string[];
  validatorModules: readonly string[];
  passwordValidatorModule: string | null;
  storeHost: MemoryStoreHost | null;
  threads: number;
}

/** A worker pool that has booted: a worker that cannot start fails here, not on a request. */
async function startPool(inputs: PoolInputs): Promise<Piscina> {
  const { config, threads } = inputs;
  const boot: WorkerBootData = {
    config: workerConfigOf(config),
    signingKeys: inputs.keys,
    grantModules: inputs.grantModules,
    validatorModules: inputs.validatorModules,
    passwordValidatorModule: inputs.passwordValidatorModule,
    logLevel: config.logLevel,
  };
  const pool = new Piscina({
    filename: workerFile.href,
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: Number.POSITIVE_INFINITY,
    // Workers hold sockets (Redis, the store bridge's port) and must keep their event loop turning
    // between tasks, which synchronous Atomics.wait would block.
    atomics: 'disabled',
    // The dispatcher keeps two batches per thread out (one running, one queued behind it) so a
    // thread never waits for the next message; two may overlap their store round trips.
    concurrentTasksPerWorker: 2,
    maxQueue: config.workers.maxQueue,
    workerData: boot,
  });
  // Attached before any worker can have posted: workers start when the pool is constructed, but
  // their messages arrive on a later turn of the event loop.
  if (inputs.storeHost !== null) pool.on('message', inputs.storeHost.acceptOffer);
  try {
    await Promise.all(Array.from({ length: threads }, () => pool.run(packEmptyBatch())));
  } catch (err) {
    await pool.destroy().catch(() => {});
    throw err;
  }
  return pool;
}

function grantTypesOf(internal: readonly string[], validators: readonly ValidatorModule[]): ReadonlySet<string> {
  const extensionGrants = validators.filter((v) => v.kind === 'extension_grant').map((v) => v.grantType);
  return new Set([...builtInGrantTypes, ...internal, ...extensionGrants]);
}

/** What a reload changes, for its log line; `undefined` when nothing did. */
function describeChange(before: readonly ValidatorModule[], after: readonly ValidatorModule[]) {
  const old = new Map(before.map((v) => [v.file, v]));
  const now = new Map(after.map((v) => [v.file, v]));
  const added = after.filter((v) => !old.has(v.file)).map((v) => v.grantType);
  const removed = before.filter((v) => !now.has(v.file)).map((v) => v.grantType);
  const changed = after.filter((v) => old.has(v.file) && old.get(v.file)?.version !== v.version).map((v) => v.grantType);
  if (added.length + removed.length + changed.length === 0) return undefined;
  return { added, removed, changed };
}

function getOnly(handler: (exchange: Exchange) => void): (res: uWS.HttpResponse, req: uWS.HttpRequest) => void {
  return (res, req) => {
    const exchange = new Exchange(res);
    const method = req.getMethod();
    if (method !== 'get' && method !== 'head') {
      exchange.sendError(OAuthErrors.getOnly, { allow: 'GET' });
      return;
    }
    handler(exchange);
  };
}

async function checkReady(store: Store, pool: Piscina, keyCount: number): Promise<string[]> {
  const problems: string[] = [];
  if (keyCount === 0) problems.push('no signing keys');
  if (pool.threads.length === 0) problems.push('no worker threads');
  try {
    await store.ping();
  } catch {
    problems.push('store unreachable');
  }
  return problems;
}

function toModuleUrl(specifier: string): string {
  return specifier.startsWith('file:') ? specifier : pathToFileURL(specifier).href;
}

function packEmptyBatch(): Uint8Array {
  // msgpack fixarray of length 0
  return Uint8Array.of(0x90);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
