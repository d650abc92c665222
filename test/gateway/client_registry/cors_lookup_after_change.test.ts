/**
 * A CORS origin lookup after a client change never shares a store read begun before it
 * (gateway/client_registry/cors_origins.ts, docs/endpoints.md "CORS"), on the memory store and on
 * Redis. A lookup of origin O begins and one of its store reads is held (its reply late, as on a
 * slow connection; the read itself ran at once, before the change); the client changes so O's
 * answer changes, and the registry empties its caches; a second lookup of O must answer as the
 * client is now, not join the first. Both directions: O just removed (the client read held) and
 * O just added (the index read held). And a read an invalidation left behind still counts in the
 * gauge and against the cap until it ends.
 */
import t from 'tap';
import { MemoryStore } from '../../../core/store/memory_store.js';
import { RedisStore } from '../../../core/store/redis_store.js';
import type { Store, StoreKey } from '../../../core/store/store.js';
import type { ClientConfig } from '../../../core/worker_config.js';
import { StoredCorsOrigins } from '../../../gateway/client_registry/cors_origins.js';
import { clientSchema } from '../../../gateway/config/schema.js';
import { corsTestRegistry, setCorsOrigins } from '../../helpers/cors_registry.js';
import { startRedisServer } from '../../helpers/redis_server.js';

const clientId = 'spa';
const origin = 'https://o.example';

function spa(allowedCorsOrigins: readonly string[]): ClientConfig {
  return clientSchema.parse({
    clientId,
    requireClientSecret: false,
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['api1'],
    allowedCorsOrigins,
  }) as ClientConfig;
}

/** A store call held once armed: sent at once (its answer is the store as it was then), replied when released. */
interface Hold {
  /** Holds the next call of `method` whose first argument `matches`. */
  arm(method: 'get' | 'familyRecords', matches: (arg: unknown) => boolean): void;
  /** Resolves once the armed call was made. */
  readonly reached: () => Promise<void>;
  readonly release: () => void;
}

function holding(store: Store): { store: Store; hold: Hold } {
  let armed: { method: string; matches: (arg: unknown) => boolean } | undefined;
  let reached = (): void => {};
  let reachedP = Promise.resolve();
  let release = (): void => {};
  let released = Promise.resolve();
  const hold: Hold = {
    arm(method, matches) {
      armed = { method, matches };
      reachedP = new Promise((resolve) => (reached = resolve));
      released = new Promise((resolve) => (release = resolve));
    },
    reached: () => reachedP,
    release: () => release(),
  };
  const proxy = new Proxy(store, {
    get: (target, name) => {
      // The store's methods use its private fields: called on the store, not on the proxy.
      const value: unknown = Reflect.get(target, name);
      if (typeof value !== 'function') return value;
      const method = (value as (...args: unknown[]) => Promise<unknown>).bind(target);
      return async (...args: unknown[]) => {
        const held = armed;
        if (held === undefined || held.method !== name || !held.matches(args[0])) return await method(...args);
        armed = undefined;
        const answer = method(...args);
        reached();
        await released;
        return await answer;
      };
    },
  });
  return { store: proxy, hold };
}

const isClientRecord = (key: unknown): boolean => (key as StoreKey).family === 'clients';

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);

const stores: Readonly<Record<string, () => Store>> = {
  memory: () => new MemoryStore(),
  redis: () => new RedisStore({ url: redis.url, keyPrefix: `cors-after-change-${process.pid}-${Math.random()}:`, commandTimeoutMs: 5000 }),
};

for (const [name, makeStore] of Object.entries(stores)) {
  const cases = [
    // The lookup read the index (O listed) and reads the client: that reply, from before the change, is held.
    { what: 'removed', before: [origin], after: [], held: 'get', matches: isClientRecord },
    // The lookup's index read (O not listed yet) is held.
    { what: 'added', before: [], after: [origin], held: 'familyRecords', matches: () => true },
  ] as const;
  for (const c of cases) {
    t.test(`${name}: a lookup after O was ${c.what} does not get the answer of a lookup begun before`, async (t) => {
      const backing = makeStore();
      t.teardown(() => backing.close());
      const { store, hold } = holding(backing);
      const registry = corsTestRegistry(store);
      t.teardown(() => registry.stop());
      t.ok(await registry.add(spa(c.before)), `the client created, ${c.before.length > 0 ? 'listing O' : 'listing nothing'}`);

      hold.arm(c.held, c.matches);
      const first = registry.origins.lookup(origin);
      await hold.reached();
      t.equal((await setCorsOrigins(registry, clientId, c.after)).status, 'written', `O ${c.what} (the caches emptied)`);
      const second = registry.origins.lookup(origin);
      t.equal(registry.origins.lookupsInFlight, 2, 'the held read and the new one both run');
      hold.release();
      t.equal(await second, c.after.length > 0, `the lookup after the change: ${c.after.length > 0 ? 'allowed' : 'refused'}`);
      t.equal(await first, c.before.length > 0, 'the lookup begun before answers as the client was');
      t.equal(registry.origins.cached(origin), c.after.length > 0, "only the new lookup's answer is cached");
      t.equal(registry.origins.lookupsInFlight, 0, 'no lookup left in flight');
      t.equal(registry.origins.storeLookups, 2, 'two store lookups');
    });
  }

  t.test(`${name}: a read an invalidation left behind counts against the cap until it ends`, async (t) => {
    const backing = makeStore();
    t.teardown(() => backing.close());
    const { store, hold } = holding(backing);
    const origins = new StoredCorsOrigins(store, { cacheSize: 10, cacheTtlMs: 60_000, recordTtlMs: 60_000, maxLookupsInFlight: 1 });
    hold.arm('familyRecords', () => true);
    const first = origins.lookup(origin);
    await hold.reached();
    origins.invalidate();
    const second = origins.lookup(origin);
    t.not(second, first, 'not joined to the read begun before the invalidation');
    t.equal(origins.storeLookups, 1, 'no store read: the held one still counts against the cap');
    t.equal(origins.lookupsInFlight, 1, 'the held read still counts in the gauge');
    hold.release();
    t.equal(await second, false, 'at the cap: not allowed this time');
    t.equal(await first, false, 'the held read answers');
    t.equal(origins.lookupsInFlight, 0, 'no lookup left in flight');
    t.equal(origins.cached(origin), undefined, 'nothing cached: the only answer was read before the invalidation');
  });
}
