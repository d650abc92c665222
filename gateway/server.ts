import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { Piscina } from 'piscina';
import { pino, type Logger } from 'pino';
import * as uWS from 'uWebSockets.js';
import { GrantRegistry, isGrantHandler } from '../workers/grants/registry.js';
import { registerClients } from '../workers/protocol/client_model.js';
import type { WorkerBootData } from '../workers/protocol/worker_boot.js';
import { createStore } from '../workers/store/create_store.js';
import { serveMemoryStore } from '../workers/store/memory_store_channel.js';
import type { Store } from '../workers/store/store.js';
import { ClientAuthenticator } from './client_auth.js';
import type { LoadedConfig } from './config/load.js';
import { buildDiscoveryDocument, buildJwksDocument, discoveryPath, jwksPath } from './discovery.js';
import { Exchange } from './http/exchange.js';
import { loadSigningKeys } from './key_loader.js';
import { GatewayMetrics } from './metrics.js';
import { createTokenEndpoint } from './token_endpoint.js';
import { WorkerDispatcher } from './worker_dispatcher.js';

export interface StartOptions {
  config: LoadedConfig;
  logger?: Logger;
  /**
   * Extra grant-handler modules (URLs or absolute paths) whose default export is a `GrantHandler`.
   * They join the same registry as the built-in grants, in every worker.
   */
  grantModules?: readonly string[];
  /** Where the development key file lives on the memory store; defaults to `./.tessera`. */
  devKeyDir?: string;
}

export interface RunningGateway {
  /** Base URL the gateway listens on, e.g. http://127.0.0.1:5000 */
  readonly url: string;
  readonly port: number;
  readonly grantTypes: readonly string[];
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

/** Starts one gateway: store, keys, worker pool, then the HTTP listener. */
export async function startGateway(options: StartOptions): Promise<RunningGateway> {
  const { config } = options;
  const logger = options.logger ?? pino({ level: config.logLevel });

  const store: Store = createStore(config.store);
  const storeChannel = config.store.type === 'memory' ? `tessera-store-${randomUUID()}` : null;
  const stopServingStore = storeChannel !== null ? serveMemoryStore(store, storeChannel) : () => {};

  let pool: Piscina | undefined;
  try {
    const keys = await loadSigningKeys(config, store, logger, options.devKeyDir);

    const grantModules = (options.grantModules ?? []).map(toModuleUrl);
    const registry = new GrantRegistry();
    for (const url of grantModules) {
      const module = (await import(url)) as { default?: unknown };
      if (!isGrantHandler(module.default)) throw new Error(`${url}: default export is not a grant handler`);
      registry.register(module.default);
    }
    const grantTypes = new Set(registry.names());

    const threads = config.workers.threads;
    const boot: WorkerBootData = {
      config,
      signingKeys: keys,
      grantModules,
      storeChannel,
      logLevel: config.logLevel,
    };
    pool = new Piscina({
      filename: workerFile.href,
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: Number.POSITIVE_INFINITY,
      // Workers hold sockets (Redis, the store channel) and must keep their event loop turning
      // between tasks, which synchronous Atomics.wait would block.
      atomics: 'disabled',
      // A few batches per thread overlap their store round trips.
      concurrentTasksPerWorker: 4,
      maxQueue: config.workers.maxQueue,
      workerData: boot,
    });
    // Fail start-up, not the first request, when a worker cannot boot.
    await Promise.all(Array.from({ length: threads }, () => (pool as Piscina).run(packEmptyBatch())));

    const dispatcher = new WorkerDispatcher(pool, { threads, maxQueue: config.workers.maxQueue, logger });
    const metrics = new GatewayMetrics(() => dispatcher.pending);
    const clients = registerClients(config.clients);
    const tokenEndpoint = createTokenEndpoint({
      issuer: config.issuer,
      authenticator: new ClientAuthenticator(clients),
      grantTypes: () => grantTypes,
      dispatcher,
      observe: metrics.countTokenResponse,
    });
    const discoveryBody = buildDiscoveryDocument(config, [...grantTypes], keys);
    const jwksBody = buildJwksDocument(keys);

    const app = uWS.App();
    const runningPool = pool;
    app.any('/connect/token', tokenEndpoint);
    app.any(discoveryPath, getOnly((ex) => ex.sendStatic(200, 'application/json; charset=utf-8', discoveryBody, 'public, max-age=300')));
    app.any(jwksPath, getOnly((ex) => ex.sendStatic(200, 'application/jwk-set+json', jwksBody, 'public, max-age=300')));
    app.any('/healthz', getOnly((ex) => ex.sendStatic(200, 'application/json', '{"status":"ok"}', 'no-store')));
    app.any(
      '/readyz',
      getOnly((ex) => {
        checkReady(store, runningPool, keys.length).then(
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
      grantTypes: [...grantTypes],
      stop() {
        stopping ??= (async () => {
          uWS.us_listen_socket_close(listenSocket);
          await Promise.race([dispatcher.drain(), delay(drainTimeoutMs)]);
          app.close();
          await runningPool.destroy();
          stopServingStore();
          await store.close();
          logger.info('tessera stopped');
        })();
        return stopping;
      },
    };
  } catch (err) {
    await pool?.destroy().catch(() => {});
    stopServingStore();
    await store.close().catch(() => {});
    throw err;
  }
}

function getOnly(handler: (exchange: Exchange) => void): (res: uWS.HttpResponse, req: uWS.HttpRequest) => void {
  return (res, req) => {
    const exchange = new Exchange(res);
    const method = req.getMethod();
    if (method !== 'get' && method !== 'head') {
      exchange.sendJson(405, '{"error":"invalid_request","error_description":"Method not allowed."}', { allow: 'GET' });
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
