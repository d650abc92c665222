/**
 * The client registry's changes by compare-and-set (docs/operations.md, "Admin API", "Concurrent
 * changes"), on the memory store and on Redis: a change of a client that another writer changes
 * before every one of its tries gives up as a conflict after `maxChangeAttempts` tries, writing
 * nothing; a removal under the same keeps going and deletes; a change of a deleted client is
 * `missing` and writes nothing. The other writer is a real second write into the same store,
 * made just before each compare-and-set.
 */
import pino from 'pino';
import t from 'tap';
import { MemoryStore } from '../../../core/store/memory_store.js';
import { RedisStore } from '../../../core/store/redis_store.js';
import type { Replacement, Store, StoreKey } from '../../../core/store/store.js';
import type { ClientConfig } from '../../../core/worker_config.js';
import {
  ClientRegistry,
  storedClientKey,
  storedClientRecord,
  storedClientTtlMs,
  type StoredClientRecord,
} from '../../../gateway/client_registry/client_registry.js';
import { maxChangeAttempts } from '../../../gateway/client_registry/record_change.js';
import { startRedisServer } from '../../helpers/redis_server.js';

const config = (clientId: string, clientName: string): ClientConfig =>
  ({
    clientId,
    clientName,
    enabled: true,
    clientSecrets: [],
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['api1'],
    allowedCorsOrigins: [],
  }) as unknown as ClientConfig;

/** `store`, where a second writer rewrites the record just before every compare-and-set. */
function contended(store: Store): { store: Store; rewrites: () => number } {
  let rewrites = 0;
  const replaceIfUnchanged = async <T>(key: StoreKey, expected: T, next: T | null, ttlMs: number): Promise<Replacement<T>> => {
    const current = await store.get<StoredClientRecord>(key);
    if (current !== null) {
      rewrites += 1;
      const other = storedClientRecord(config(current.config.clientId, `other writer ${rewrites}`), Date.now(), current);
      await store.set(key, other, storedClientTtlMs);
    }
    return store.replaceIfUnchanged(key, expected, next, ttlMs);
  };
  return {
    store: new Proxy(store, {
      get: (target, name) => {
        if (name === 'replaceIfUnchanged') return replaceIfUnchanged;
        // The store's methods use its private fields: called on the store, not on the proxy.
        const value: unknown = Reflect.get(target, name);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }),
    rewrites: () => rewrites,
  };
}

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);

const stores: Readonly<Record<string, () => Store>> = {
  memory: () => new MemoryStore(),
  redis: () => new RedisStore({ url: redis.url, keyPrefix: `registry-conflict-${process.pid}-${Math.random()}:`, commandTimeoutMs: 5000 }),
};

for (const [name, makeStore] of Object.entries(stores)) {
  t.test(
    `${name}: a client changed before every try answers conflict after ${maxChangeAttempts} tries; a removal still deletes`,
    async (t) => {
      const backing = makeStore();
      t.teardown(() => backing.close());
      const { store, rewrites } = contended(backing);
      const registry = new ClientRegistry(store, {
        cacheSize: 10,
        negativeCacheSize: 10,
        cacheTtlMs: 60_000,
        pollIntervalMs: 60_000,
        logger: pino({ level: 'silent' }),
      });
      t.teardown(() => registry.stop());
      t.ok(await registry.add(config('busy', 'first')));
      let edits = 0;
      const outcome = await registry.change('busy', (current) => {
        edits += 1;
        return { config: { ...current.config, clientName: 'mine' } };
      });
      t.same(outcome, { status: 'conflict' });
      t.equal(edits, maxChangeAttempts, 'the change was applied again to each value the client had');
      t.equal(rewrites(), maxChangeAttempts);
      t.equal((await registry.read('busy'))?.config.clientName, `other writer ${maxChangeAttempts}`, 'nothing of it written');

      t.equal(await registry.remove('busy'), true, 'a removal is never refused for a concurrent change');
      t.equal(await backing.get(storedClientKey('busy')), null, 'deleted');
      t.same(await registry.change('busy', (current) => ({ config: current.config })), { status: 'missing' });
      t.equal(await backing.get(storedClientKey('busy')), null, 'a change of a deleted client writes nothing');
      t.equal(await registry.remove('busy'), false);
    },
  );
}
