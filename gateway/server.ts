import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { statSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { Piscina } from 'piscina';
import type { Logger } from 'pino';
import { isGrantHandler } from '../workers/grants/registry.js';
import { registerClients, type RegisteredClient } from '../workers/protocol/client_model.js';
import { builtInGrantTypes } from '../workers/protocol/grant_types.js';
import { newStoreCommandBuffers, StoreCommandStats } from '../workers/protocol/store_command_stats.js';
import { createStore } from '../workers/store/create_store.js';
import type { Store } from '../workers/store/store.js';
import { ClientAuthenticator } from './client_authentication/authenticator.js';
import { ClientAuthThrottle } from '../workers/store/throttles.js';
import { ClientKeys } from './client_authentication/client_keys.js';
import type { ClientAuthenticationDeps } from './client_authentication/step.js';
import type { LoadedConfig } from './config/load.js';
import { reloadConfig, type ReloadableGateway, type ReloadResult } from './config_reload.js';
import { buildDiscoveryDocument } from './discovery.js';
import { KeyRing, type KeyReloadResult } from './keys/key_ring.js';
import { openPageSecret, type PageSecretLoad } from './keys/page_secret.js';
import { openKeyEncryption } from './keys/key_encryption.js';
import { deriveDPoPNonceKey } from './keys/dpop_nonce_key.js';
import type { SpanProcessor } from '@opentelemetry/sdk-trace';
import { createEndpointObservers } from './endpoint_outcomes.js';
import { openTracing } from './tracing/open_tracing.js';
import type { AuditEventHook, AuditEvents } from './events/audit_events.js';
import { openAuditEvents } from './events/open_audit_events.js';
import { createLogger } from './logger.js';
import { startManagementListener, type ManagementListener } from './management_listener.js';
import { GatewayMetrics } from './metrics.js';
import { Listener } from './http/listener.js';
import { recordRoutes, RouteTable } from './http/route_table.js';
import { ServingState } from './http/serving_state.js';
import { TrustedProxies } from './http/trusted_proxies.js';
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
  /** Where `TESSERA_KEY_ENCRYPTION_KEY` is read from (docs/security.md, "Keys at rest"); default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Reload signing keys when a configured key file changes (default true). */
  watchKeys?: boolean;
  /**
   * Called with every audit event (docs/operations.md, "Events"), after the request it is about
   * was answered; besides the sinks of `events` in the config. Must not throw (a throw is logged).
   */
  onEvent?: AuditEventHook;
  /**
   * Where trace spans go when tracing is on (`tracing.enabled` or `OTEL_TRACES_EXPORTER=otlp`),
   * instead of the OTLP exporter the `OTEL_*` variables configure (docs/operations.md, "Tracing").
   */
  spanProcessor?: SpanProcessor;
  /**
   * Reads and validates the config again for {@link RunningGateway.reload}, knowing the grant
   * types the validators serve now (the builder passes one that re-reads the config file).
   */
  reloadConfig?: (extraGrantTypes: readonly string[]) => Promise<LoadedConfig>;
  /**
   * This gateway's place among the processes `tessera start --processes N` runs on one port
   * (docs/operations.md, "Several processes"): its management listener takes `management.port`
   * plus the index, and its metrics, audit events and `tessera listening` line carry the index.
   */
  process?: ProcessSlot;
}

/** One of the front-end processes sharing a port: `index` counts from 0 to `count - 1`. */
export interface ProcessSlot {
  readonly index: number;
  readonly count: number;
}

export type { ReloadResult } from './config_reload.js';

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
  /** The config in service (changes on {@link RunningGateway.reload}). */
  readonly config: LoadedConfig;
  /**
   * Reads the config again and applies it without a restart (docs/operations.md, "Reload"):
   * clients, scopes, resources, users, throttles and proxies change, state (sessions, refresh
   * tokens, counters) stays, the TLS files are read again. A config that does not validate is
   * refused and the running one stays. `tessera start` calls it on SIGHUP.
   */
  reload(): Promise<ReloadResult>;
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
  const { config: initialConfig } = options;
  // Replaced by a config reload; read through `config` wherever a later pool or route set is built.
  let config = initialConfig;
  const logger = options.logger ?? createLogger(config);
  // Only with several processes: a lone gateway's metrics and events keep their shape.
  const processSlot = options.process !== undefined && options.process.count > 1 ? options.process : undefined;

  // Store command latency, counted by this thread and every worker into shared memory.
  const storeStatsBuffers = newStoreCommandBuffers();
  const storeStats = new StoreCommandStats(storeStatsBuffers);
  const store: Store = createStore(config.store, { observe: storeStats.record });
  // The memory store lives on this thread; each worker reaches it over a port of its own.
  const storeHost = store instanceof MemoryStore ? new MemoryStoreHost(store) : null;

  let pool: Piscina | undefined;
  let listener: Listener | undefined;
  let stopWatching = (): void => {};
  let keyRing: KeyRing | undefined;
  // Declared before the key ring, whose activations count into it, is opened.
  let metrics: GatewayMetrics | undefined;
  let events: AuditEvents | undefined;
  let management: ManagementListener | undefined;
  let pageSecretLoad: PageSecretLoad | undefined;
  const tracing = openTracing(config, process.env, options.spanProcessor);
  try {
    const devKeyDir = options.devKeyDir ?? path.resolve('.tessera');
    events = await openAuditEvents(config, options.onEvent === undefined ? [] : [options.onEvent], logger, processSlot?.index);
    const auditEvents = events;
    const keyEncryption = await openKeyEncryption(config, options.env ?? process.env, logger);
    keyRing = await KeyRing.open({
      config,
      store,
      logger,
      devKeyDir,
      keyEncryption,
      watch: options.watchKeys !== false,
      onSigningKeyChange: (kid) => {
        metrics?.countKeyRotation();
        auditEvents.emit({ name: 'KeyRotated', outcome: 'success', details: { kid } });
      },
    });
    const keys = keyRing;
    // On Redis it may come later: the gateway starts without the store (docs/operations.md,
    // "Starting without the store").
    pageSecretLoad = await openPageSecret(config, store, devKeyDir, { logger, encryption: keyEncryption });
    let pageSecret = pageSecretLoad.secret;
    // The workers' DPoP nonce key until then: no nonce is handed out or checked meanwhile (the
    // token endpoint refuses a client that needs one), so it only fills the place.
    const placeholderSecret = randomBytes(32).toString('base64url');

    const grantModules = (options.grantModules ?? []).map(toModuleUrl);
    const internalGrantTypes = await grantTypesOfModules(grantModules);
    const reservedGrantTypes = [...new Set([...builtInGrantTypes, ...internalGrantTypes])];

    // Worker threads whose heartbeat stopped: the dispatcher keeps the set, every pool's balancer avoids them.
    const suspectThreads = new Set<number>();
    // Validators are checked here once (exit 2 on a bad module) before every worker loads them.
    const sources = { dir: config.validatorsDir, modules: (options.validatorModules ?? []).map(toModuleUrl) };
    const startPoolWith = (poolConfig: LoadedConfig, modules: readonly ValidatorModule[]): Promise<Piscina> =>
      startWorkerPool({
        config: poolConfig,
        keySet: keys.cell,
        grantModules,
        validatorModules: modules.filter((m) => m.kind === 'extension_grant').map((m) => m.url),
        passwordValidatorModule: modules.find((m) => m.kind === 'resource_owner_password')?.url ?? null,
        profileServiceModule: modules.find((m) => m.kind === 'profile_service')?.url ?? null,
        storeHost,
        recordFacts: auditEvents.enabled,
        recordTiming: tracing !== undefined,
        storeStats: storeStatsBuffers,
        dpopNonceKey: deriveDPoPNonceKey(pageSecret ?? placeholderSecret),
        suspectThreads,
      });
    const startPool = (modules: readonly ValidatorModule[]): Promise<Piscina> => startPoolWith(config, modules);
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
      suspectThreads,
      logger,
      onBatch: (size) => metrics?.observeBatch(size),
      onRefusal: (lane, reason) => metrics?.countRefusal(lane, reason),
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
    const gatewayMetrics = metrics;
    // Applied when /metrics is rendered, to every series: with `management.onPublicPort` a scrape
    // reaches whichever process the connection landed on.
    if (processSlot !== undefined) metrics.registry.setDefaultLabels({ process: String(processSlot.index) });
    const storeOutage = new StoreOutageLog(logger);

    let discoveryBody = '';
    // Requests in flight and the drain (docs/operations.md, "Signals and shutdown").
    const serving = new ServingState();
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

    // Every route built from one config; a reload builds a new set and swaps it in. The failure
    // throttle keeps its counts across reloads unless its limits change.
    let throttle = new ClientAuthThrottle(store, config.throttling.clientAuthentication, logger);
    const buildRoutes = (routeConfig: LoadedConfig, routeThrottle: ClientAuthThrottle) => {
      const clients = registerClients(routeConfig.clients);
      return recordRoutes(
        (app) =>
          registerRoutes(app, {
            config: routeConfig,
            keys,
            pageSecret,
            store,
            clients,
            clientAuthentication: clientAuthenticationOf(routeConfig, clients, routeThrottle, logger),
            dispatcher,
            metrics: gatewayMetrics,
            observers: createEndpointObservers({ metrics: gatewayMetrics, events: auditEvents, logger, storeOutage, tracing }),
            events: auditEvents,
            publicMetricsToken: routeConfig.management.onPublicPort ? routeConfig.management.token : undefined,
            grantTypes: () => reload.grantTypes,
            discoveryBody: () => discoveryBody,
            draining: () => serving.draining,
            logger,
          }),
        new TrustedProxies(routeConfig.trustedProxies, routeConfig.forwardedHeader),
      );
    };
    const routes = new RouteTable(buildRoutes(config, throttle), serving);
    // Config reloads and validator reloads both start pools: one at a time.
    let reloading: Promise<unknown> = Promise.resolve();
    const serially = <T>(step: () => Promise<T>): Promise<T> => {
      const run = reloading.then(step, step);
      reloading = run.catch(() => {});
      return run;
    };
    // The page secret once the store answers: a pool whose workers have the DPoP nonce key, and
    // routes that serve the pages, switched in as on a config reload.
    const adoptPageSecret = async (secret: string): Promise<void> => {
      if (serving.draining) return;
      pageSecret = secret;
      const next = await startPool(reload.modules);
      if (serving.draining) {
        await next.destroy();
        return;
      }
      routes.replace(buildRoutes(config, throttle));
      logger.info('the store answers: page secret loaded, the pages and DPoP nonces are served');
      await dispatcher.replacePool(next);
    };
    if (pageSecret === undefined) {
      const keepTrying = (secret: string): void => {
        serially(() => adoptPageSecret(secret)).catch((err: unknown) => {
          logger.error({ err }, 'could not start the worker threads with the page secret; trying again in a second');
          pageSecret = undefined;
          setTimeout(() => keepTrying(secret), 1000).unref();
        });
      };
      void pageSecretLoad.loaded.then(keepTrying);
    }
    if (options.watchValidators !== false) {
      stopWatching = watchValidators(
        config.validatorsDir,
        () => serially(reload.reload),
        logger,
        () => reload.modules.flatMap((module) => module.dataFiles),
      );
    }

    // Before the public listener: a management port that is taken fails the start with nothing
    // listening yet.
    if (!config.management.onPublicPort) {
      // With several processes each has its own: management.port + index (0 stays "any free port").
      const managementPort =
        config.management.port === 0 || processSlot === undefined ? config.management.port : config.management.port + processSlot.index;
      management = await startManagementListener(metrics, { ...config.management, port: managementPort });
    }
    // Only the processes of one `--processes N` share the port (SO_REUSEPORT, uWS's default); any
    // other gateway on it would silently take half the connections (docs/operations.md, "Several gateways").
    listener = await Listener.open({
      host: config.listen.host,
      port: config.listen.port,
      exclusive: processSlot === undefined,
      tls: config.tls,
      mount: (app) => routes.mount(app),
    });
    const running = listener;

    // The config reload's steps (gateway/config_reload.ts); the throttle keeps its counts unless
    // its limits change.
    const reloadable: ReloadableGateway = {
      logger,
      current: () => config,
      unavailable: () =>
        serving.draining
          ? 'the gateway is stopping'
          : options.reloadConfig === undefined
            ? 'the gateway was not started from a config file: there is nothing to read again'
            : undefined,
      read: async () => {
        if (options.reloadConfig === undefined) throw new Error('no config file to read again');
        return options.reloadConfig([...reload.grantTypes]);
      },
      startPool: (next) => startPoolWith(next, reload.modules),
      reloadTls: async (next) => {
        if (next.tls !== undefined && running.secure) await running.reloadTls(next.tls);
      },
      replaceRoutes: (next) => {
        const limits = next.throttling.clientAuthentication;
        const sameLimits = JSON.stringify(limits) === JSON.stringify(config.throttling.clientAuthentication);
        const nextThrottle = sameLimits ? throttle : new ClientAuthThrottle(store, limits, logger);
        if (!routes.replace(buildRoutes(next, nextThrottle))) return false;
        throttle = nextThrottle;
        return true;
      },
      commit: (next, nextPool) => {
        config = next;
        const replaced = dispatcher.replacePool(nextPool);
        discoveryBody = buildDiscoveryDocument(config, [...reload.grantTypes], keys.set.keys);
        logger.level = config.logLevel;
        return replaced;
      },
    };
    const port = listener.port;
    const host = config.listen.host;
    const url = `${listener.secure ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
    const managementUrl = management?.url;
    logger.info(
      {
        url,
        issuer: config.issuer,
        threads: config.workers.threads,
        store: config.store.type,
        ...(processSlot === undefined ? {} : { processes: processSlot.count }),
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
      get config() {
        return config;
      },
      reload: () => serially(() => reloadConfig(reloadable)),
      reloadKeys(next) {
        return keys.reload(next);
      },
      stop(stopOptions) {
        stopping ??= (async () => {
          // From now on every answer closes its connection: keep-alive clients open their next
          // one, which the balancer sends elsewhere once /readyz has failed.
          serving.draining = true;
          const drainSeconds = stopOptions?.drainSeconds ?? 0;
          if (drainSeconds > 0) {
            logger.info({ drainSeconds }, 'draining: /readyz answers 503, requests are still served, each answer closes its connection');
            await delay(drainSeconds * 1000);
          }
          stopWatching();
          keys.stop();
          pageSecretLoad?.stop();
          reload.cancel();
          running.stopListening();
          // Every request that arrived is answered (bounded); then the connections still open,
          // idle ones, close with the app.
          const answered = Promise.all([serving.idle(), dispatcher.drain()]);
          await Promise.race([answered, delay(config.shutdown.requestTimeoutSeconds * 1000)]);
          if (serving.inFlight > 0) {
            logger.warn(
              { inFlight: serving.inFlight, requestTimeoutSeconds: config.shutdown.requestTimeoutSeconds },
              'stopping with requests unanswered after shutdown.requestTimeoutSeconds',
            );
          }
          running.close();
          runningManagement?.close();
          storeOutage.close();
          await auditEvents.close();
          await tracing?.close();
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
    pageSecretLoad?.stop();
    listener?.close();
    keyRing?.stop();
    management?.close();
    await events?.close();
    await tracing?.close();
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

/**
 * One authenticator and one set of client keys for every endpoint that authenticates clients,
 * with the failure throttle (which outlives a config reload when its limits stay).
 */
function clientAuthenticationOf(
  config: LoadedConfig,
  clients: ReadonlyMap<string, RegisteredClient>,
  throttle: ClientAuthThrottle,
  logger: Logger,
): ClientAuthenticationDeps {
  const assertions = config.clientAssertions;
  // draft-ietf-oauth-rfc7523bis: `aud` is the issuer alone; the token endpoint URL only for a
  // client that allows it (docs/security.md, "Client assertions").
  return {
    issuer: config.issuer,
    authenticator: new ClientAuthenticator(clients, Date.now, {
      issuer: config.issuer,
      tokenEndpoint: `${config.issuer}/connect/token`,
      allowsTokenEndpointAudience: (clientId) => clients.get(clientId)?.config.allowTokenEndpointAudience === true,
      maxLifetimeSeconds: assertions.maxLifetimeSeconds,
      now: Date.now,
    }),
    // API resources authenticate at introspection and are throttled the same way.
    throttle,
    clientKeys: new ClientKeys(clients, {
      cacheMs: assertions.jwksCacheSeconds * 1000,
      cooldownMs: assertions.jwksRefreshCooldownSeconds * 1000,
      timeoutMs: assertions.jwksTimeoutMs,
      logger,
    }),
  };
}

function toModuleUrl(specifier: string): string {
  return specifier.startsWith('file:') ? specifier : pathToFileURL(specifier).href;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
