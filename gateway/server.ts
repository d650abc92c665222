import path from 'node:path';
import { statSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { Piscina } from 'piscina';
import type { Logger } from 'pino';
import * as uWS from 'uWebSockets.js';
import { isGrantHandler } from '../workers/grants/registry.js';
import { registerClients, type RegisteredClient } from '../workers/protocol/client_model.js';
import { builtInGrantTypes } from '../workers/protocol/grant_types.js';
import { newStoreCommandBuffers, StoreCommandStats } from '../workers/protocol/store_command_stats.js';
import { createStore } from '../workers/store/create_store.js';
import type { Store } from '../workers/store/store.js';
import { ClientAuthenticator } from './client_authentication/authenticator.js';
import { ClientAuthThrottle } from './client_authentication/throttle.js';
import type { ClientAuthenticationDeps } from './client_authentication/step.js';
import type { LoadedConfig } from './config/load.js';
import { buildDiscoveryDocument } from './discovery.js';
import { KeyRing, type KeyReloadResult } from './keys/key_ring.js';
import { loadPageSecret } from './keys/page_secret.js';
import { deriveDPoPNonceKey } from './keys/dpop_nonce_key.js';
import { createEndpointObservers } from './endpoint_outcomes.js';
import type { AuditEventHook, AuditEvents } from './events/audit_events.js';
import { openAuditEvents } from './events/open_audit_events.js';
import { createLogger } from './logger.js';
import { startManagementListener, type ManagementListener } from './management_listener.js';
import { GatewayMetrics } from './metrics.js';
import { StoreOutageLog } from './store_outage_log.js';
import { registerRoutes } from './routes.js';
import { MemoryStoreHost } from './store/memory_store_host.js';
import { loadValidatorModules, type ValidatorModule } from './validator_loader.js';
import { ValidatorReload } from './validator_reload.js';
import { watchValidators } from './validator_watcher.js';
import { WorkerDispatcher } from './worker_dispatcher.js';
import { startWorkerPool } from './worker_pool.js';
import { MemoryStore } from '../workers/store/memory_store.js';

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
  /** Reload signing keys when a configured key file changes (default true). */
  watchKeys?: boolean;
  /**
   * Called with every audit event (docs/operations.md, "Events"), after the request it is about
   * was answered; besides the sinks of `events` in the config. Must not throw (a throw is logged).
   */
  onEvent?: AuditEventHook;
}

export interface RunningGateway {
  /** Base URL the gateway listens on, e.g. http://127.0.0.1:5000 */
  readonly url: string;
  readonly port: number;
  /** Base URL of the management listener (`/metrics`); `undefined` when metrics are on the public port. */
  readonly managementUrl: string | undefined;
  /** The gateway's audit events: `emit` for what happens outside a request (a key rotation). */
  readonly events: AuditEvents;
  /** The gateway's metrics (the signing key's age source, rotations). */
  readonly metrics: GatewayMetrics;
  /** The grant types served right now (changes when validators reload). */
  readonly grantTypes: readonly string[];
  /** Resolves after the next validator reload attempt: `true` when it took effect. */
  nextValidatorReload(): Promise<boolean>;
  /**
   * Reads the signing keys again (docs/operations.md, "Signing keys and rotation"): the key files,
   * or with `config` the key files it lists; or the store for store-kept keys. A key file that
   * cannot be used keeps the running keys (logged, and `ok: false`). `tessera start` calls it on
   * SIGHUP.
   */
  reloadKeys(config?: LoadedConfig): Promise<KeyReloadResult>;
  /**
   * Graceful stop (docs/operations.md, "Signals and shutdown"): `/readyz` turns 503 at once and
   * requests are still served for `drainSeconds` (default 0: embedding code and tests stop at
   * once; `tessera start` passes the config's `shutdown.drainSeconds` on SIGTERM); then the
   * listener closes, requests in flight finish within `shutdown.requestTimeoutSeconds`, and the
   * pool and the store close.
   */
  stop(options?: StopOptions): Promise<void>;
}

export interface StopOptions {
  readonly drainSeconds?: number;
}

/**
 * Starts one gateway: store, signing keys, grant and validator modules, the worker pool, the
 * routes, then the listener (docs/architecture.md, docs/operations.md "Running").
 */
export async function startGateway(options: StartOptions): Promise<RunningGateway> {
  const { config } = options;
  const logger = options.logger ?? createLogger(config);

  // Store command latency, counted by this thread and every worker into shared memory.
  const storeStatsBuffers = newStoreCommandBuffers();
  const storeStats = new StoreCommandStats(storeStatsBuffers);
  const store: Store = createStore(config.store, { observe: storeStats.record });
  // The memory store lives on this thread; each worker reaches it over a port of its own.
  const storeHost = config.store.type === 'memory' ? new MemoryStoreHost(store) : null;

  let pool: Piscina | undefined;
  let stopWatching = (): void => {};
  let keyRing: KeyRing | undefined;
  // Declared before the key ring, whose activations count into it, is opened.
  let metrics: GatewayMetrics | undefined;
  let events: AuditEvents | undefined;
  let management: ManagementListener | undefined;
  try {
    const devKeyDir = options.devKeyDir ?? path.resolve('.tessera');
    events = await openAuditEvents(config, options.onEvent === undefined ? [] : [options.onEvent], logger);
    const auditEvents = events;
    keyRing = await KeyRing.open({
      config,
      store,
      logger,
      devKeyDir,
      watch: options.watchKeys !== false,
      onSigningKeyChange: (kid) => {
        metrics?.countKeyRotation();
        auditEvents.emit({ name: 'KeyRotated', outcome: 'success', details: { kid } });
      },
    });
    const keys = keyRing;
    const pageSecret = await loadPageSecret(config, store, devKeyDir);

    const grantModules = (options.grantModules ?? []).map(toModuleUrl);
    const internalGrantTypes = await grantTypesOfModules(grantModules);
    const reservedGrantTypes = [...new Set([...builtInGrantTypes, ...internalGrantTypes])];

    // Validators are checked here once (exit 2 on a bad module) before every worker loads them.
    const sources = { dir: config.validatorsDir, modules: (options.validatorModules ?? []).map(toModuleUrl) };
    const startPool = (modules: readonly ValidatorModule[]): Promise<Piscina> =>
      startWorkerPool({
        config,
        keySet: keys.cell,
        grantModules,
        validatorModules: modules.filter((m) => m.kind === 'extension_grant').map((m) => m.url),
        passwordValidatorModule: modules.find((m) => m.kind === 'resource_owner_password')?.url ?? null,
        storeHost,
        recordFacts: auditEvents.enabled,
        storeStats: storeStatsBuffers,
        dpopNonceKey: deriveDPoPNonceKey(pageSecret),
      });
    const validators = await loadValidatorModules(sources, reservedGrantTypes);
    pool = await startPool(validators);

    // The dispatcher and the metrics refer to each other: in-flight count one way, batch sizes the other.
    const dispatcher = new WorkerDispatcher(pool, {
      threads: config.workers.threads,
      maxQueue: config.workers.maxQueue,
      passwordLane: {
        concurrency: config.workers.passwordConcurrency,
        maxQueue: config.workers.passwordMaxQueue,
        shedDelayMs: config.workers.passwordShedDelayMs,
      },
      // A thread stuck past the validators' own time limit is terminated (docs/operations.md,
      // "Worker faults"); never under a second, so a loaded machine's slow event loop is not
      // mistaken for a stuck thread.
      stallTimeoutMs: Math.max(config.validatorTimeoutMs, 1000),
      logger,
      onBatch: (size) => metrics?.observeBatch(size),
    });
    metrics = new GatewayMetrics(
      {
        inFlight: () => dispatcher.pending,
        waiting: () => dispatcher.waiting,
        poolQueue: () => dispatcher.currentPool.queueSize,
        utilization: () => dispatcher.currentPool.utilization,
        threads: () => dispatcher.currentPool.threads.length,
      },
      {
        memoryStore: store instanceof MemoryStore ? store : undefined,
        signingKeyCreatedAt: signingKeyCreatedAt(keys, config.signing.keys[0]?.file),
        eventsDropped: () => auditEvents.droppedCounts(),
        storeCommands: () => storeStats.read(),
      },
    );
    const storeOutage = new StoreOutageLog(logger);

    let discoveryBody = '';
    let draining = false;
    const reload = new ValidatorReload(
      {
        sources,
        reservedGrantTypes,
        internalGrantTypes,
        startPool,
        replacePool: (next) => dispatcher.replacePool(next),
        onReloaded: (grantTypes, change) => {
          discoveryBody = buildDiscoveryDocument(config, [...grantTypes], keys.set.keys);
          auditEvents.emit({
            name: 'ValidatorReloaded',
            outcome: 'success',
            details: { added: change.added, removed: change.removed, changed: change.changed },
          });
        },
        onRefused: (reason) => auditEvents.emit({ name: 'ValidatorReloaded', outcome: 'failure', error: reason }),
        logger,
      },
      validators,
    );
    discoveryBody = buildDiscoveryDocument(config, [...reload.grantTypes], keys.set.keys);

    const clients = registerClients(config.clients);
    const app = uWS.App();
    registerRoutes(app, {
      config,
      keys,
      pageSecret,
      store,
      clients,
      clientAuthentication: clientAuthenticationOf(config, clients, store, logger),
      dispatcher,
      metrics,
      observers: createEndpointObservers({ metrics, events: auditEvents, logger, storeOutage }),
      events: auditEvents,
      publicMetricsToken: config.management.onPublicPort ? config.management.token : undefined,
      grantTypes: () => reload.grantTypes,
      discoveryBody: () => discoveryBody,
      draining: () => draining,
      logger,
    });
    if (options.watchValidators !== false) stopWatching = watchValidators(config.validatorsDir, reload.reload, logger);

    // Before the public listener: a management port that is taken fails the start with nothing
    // listening yet.
    if (!config.management.onPublicPort) management = await startManagementListener(metrics, config.management);
    // The memory store is one process's state: a second gateway sharing the port (SO_REUSEPORT,
    // uWS's default) would split clients between two stores, so the port is taken exclusively.
    const listenSocket = await listen(app, config.listen.host, config.listen.port, config.store.type === 'memory');
    const port = uWS.us_socket_local_port(listenSocket as unknown as uWS.us_socket);
    const host = config.listen.host;
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    const managementUrl = management?.url;
    logger.info(
      {
        url,
        issuer: config.issuer,
        threads: config.workers.threads,
        store: config.store.type,
        grantTypes: [...reload.grantTypes],
        metrics: `${managementUrl ?? url}/metrics`,
        events: { sink: config.events.sink, redisStream: config.events.redisStream?.key },
      },
      'tessera listening',
    );

    let stopping: Promise<void> | undefined;
    const runningManagement = management;
    return {
      url,
      port,
      managementUrl,
      events: auditEvents,
      metrics,
      get grantTypes() {
        return [...reload.grantTypes];
      },
      nextValidatorReload() {
        return reload.next();
      },
      reloadKeys(next) {
        return keys.reload(next);
      },
      stop(stopOptions) {
        stopping ??= (async () => {
          draining = true;
          const drainSeconds = stopOptions?.drainSeconds ?? 0;
          if (drainSeconds > 0) {
            logger.info({ drainSeconds }, 'draining: /readyz answers 503, requests are still served');
            await delay(drainSeconds * 1000);
          }
          stopWatching();
          keys.stop();
          reload.cancel();
          uWS.us_listen_socket_close(listenSocket);
          await Promise.race([dispatcher.drain(), delay(config.shutdown.requestTimeoutSeconds * 1000)]);
          app.close();
          runningManagement?.close();
          storeOutage.close();
          await auditEvents.close();
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
    keyRing?.stop();
    management?.close();
    await events?.close();
    await pool?.destroy().catch(() => {});
    storeHost?.close();
    await store.close().catch(() => {});
    throw err;
  }
}

/**
 * When the signing key began, for its age (`tessera_signing_key_age_seconds`): the activation of
 * a store-kept key, or the key file's modification time (read at each scrape: a reload may have
 * replaced it); unknown for a key with neither.
 */
function signingKeyCreatedAt(keys: KeyRing, file: string | undefined): () => number | undefined {
  return () => {
    const since = keys.signingSince;
    if (since > 0) return since;
    if (file === undefined) return undefined;
    try {
      return statSync(file).mtimeMs;
    } catch {
      return undefined;
    }
  };
}

/** The grant types of the embedding code's grant modules, each checked to be a grant handler. */
async function grantTypesOfModules(urls: readonly string[]): Promise<string[]> {
  const grantTypes: string[] = [];
  for (const url of urls) {
    const module = (await import(url)) as { default?: unknown };
    if (!isGrantHandler(module.default)) throw new Error(`${url}: default export is not a grant handler`);
    grantTypes.push(module.default.grantType);
  }
  return grantTypes;
}

/** One authenticator and one failure throttle for every endpoint that authenticates clients. */
function clientAuthenticationOf(
  config: LoadedConfig,
  clients: ReadonlyMap<string, RegisteredClient>,
  store: Store,
  logger: Logger,
): ClientAuthenticationDeps {
  return {
    issuer: config.issuer,
    authenticator: new ClientAuthenticator(clients),
    // API resources authenticate at introspection and are throttled the same way.
    throttle: new ClientAuthThrottle(store, config.throttling.clientAuthentication, logger),
  };
}

const listenExclusivePort = (uWS as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT: number }).LIBUS_LISTEN_EXCLUSIVE_PORT;

function listen(app: uWS.TemplatedApp, host: string, port: number, exclusive: boolean): Promise<uWS.us_listen_socket> {
  return new Promise<uWS.us_listen_socket>((resolve, reject) => {
    const done = (socket: uWS.us_listen_socket | false): void => {
      if (socket !== false) resolve(socket);
      else if (exclusive) {
        reject(
          new Error(
            `cannot listen on ${host}:${port}: the port is in use. With the memory store a gateway needs the port to ` +
              'itself (its state lives in this one process); run one gateway per memory store, or share Redis',
          ),
        );
      } else reject(new Error(`cannot listen on ${host}:${port}`));
    };
    // uWS.js has the (host, port, options, cb) form and the option's constant at run time, but
    // its types declare neither.
    const listenWithOptions = app.listen as unknown as (
      host: string,
      port: number,
      options: number,
      cb: (socket: uWS.us_listen_socket | false) => void,
    ) => uWS.TemplatedApp;
    if (exclusive) listenWithOptions.call(app, host, port, listenExclusivePort, done);
    else app.listen(host, port, done);
  });
}

function toModuleUrl(specifier: string): string {
  return specifier.startsWith('file:') ? specifier : pathToFileURL(specifier).href;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
