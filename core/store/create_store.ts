/**
 * Builds the store the config asks for (docs/configuration.md `store`, docs/storage.md).
 */
import { isMainThread } from 'node:worker_threads';
import type { StoreConfig } from '../worker_config.js';
import { MemoryStore } from './memory_store.js';
import { RedisStore, type RedisStoreCommonOptions } from './redis_store.js';
import type { Store } from './store.js';

export interface CreateStoreOptions {
  /** Clock of the in-memory store (tests). */
  now?: () => number;
  /** Connection errors of the Redis client, for logging. */
  onError?: (err: Error) => void;
  /** Each Redis command's name, duration and failure, for the store metrics (wire/store_command_stats.ts). */
  observe?: (command: string, seconds: number, failed: boolean) => void;
  /**
   * In a worker thread, the `memory` store is the bridge to the main thread's one: the worker
   * passes its connector (workers/store/memory_store_client.ts), so that this shared module
   * loads nothing of the worker side.
   */
  connectMemoryHost?: () => Store;
}

/**
 * Creates the configured store.
 *
 * - `memory`: a {@link MemoryStore} on the main thread; in a worker thread the bridge to the main
 *   thread's one (`connectMemoryHost`, served by the gateway's `MemoryStoreHost`). A
 *   private MemoryStore per worker would let each thread redeem the same code once.
 * - `redis` / `redis-cluster` / `redis-sentinel`: a {@link RedisStore} (one connection per thread
 *   that calls this; on Sentinel, to whichever server the Sentinels name master).
 *
 * @example
 * ```ts
 * const store = createStore(config.store, { onError: (err) => logger.warn({ err }, 'redis') });
 * ```
 */
export function createStore(config: StoreConfig, options: CreateStoreOptions = {}): Store {
  switch (config.type) {
    case 'memory':
      if (isMainThread)
        return new MemoryStore({ maxRecords: config.maxRecords, ...(options.now === undefined ? {} : { now: options.now }) });
      if (options.connectMemoryHost === undefined) throw new Error('the memory store in a worker thread needs connectMemoryHost');
      return options.connectMemoryHost();
    case 'redis':
      return new RedisStore({
        url: config.url,
        ...redisCommonOptions(config, options),
      });
    case 'redis-cluster':
      return new RedisStore({
        nodes: config.nodes,
        ...redisCommonOptions(config, options),
      });
    case 'redis-sentinel':
      return new RedisStore({
        sentinels: config.sentinels,
        name: config.name,
        ...(config.password === undefined ? {} : { password: config.password }),
        ...(config.username === undefined ? {} : { username: config.username }),
        ...(config.sentinelPassword === undefined ? {} : { sentinelPassword: config.sentinelPassword }),
        ...(config.sentinelUsername === undefined ? {} : { sentinelUsername: config.sentinelUsername }),
        tls: config.tls,
        waitForReplicas: config.waitForReplicas,
        ...redisCommonOptions(config, options),
      });
  }
}

/** The options every Redis store gets from its config section and from the caller. */
function redisCommonOptions(
  config: { readonly keyPrefix: string; readonly commandTimeoutMs: number },
  options: CreateStoreOptions,
): RedisStoreCommonOptions {
  return {
    keyPrefix: config.keyPrefix,
    commandTimeoutMs: config.commandTimeoutMs,
    ...(options.onError === undefined ? {} : { onError: options.onError }),
    ...(options.observe === undefined ? {} : { observe: options.observe }),
  };
}
