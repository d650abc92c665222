/**
 * The CORS origin index under concurrent changes of one client (gateway/client_registry/
 * cors_origins.ts, docs/endpoints.md "CORS"), on the memory store and on Redis: whatever order two
 * changes' index writes land in, once both have returned the index holds exactly the origins the
 * client lists as stored, and a lookup allows exactly those.
 *
 * First the order that refused an origin before the index followed the stored client: change A
 * (X to Y) has replaced the record, and its removal of X is held (a slow connection, another
 * gateway); change B (Y to X) runs whole meanwhile; then A's removal lands, after B wrote X. Then
 * pairs of changes at once, repeated, with every index write delayed at random.
 */
import t from 'tap';
import { MemoryStore } from '../../../core/store/memory_store.js';
import { RedisStore } from '../../../core/store/redis_store.js';
import type { Store, StoreKey } from '../../../core/store/store.js';
import type { ClientConfig } from '../../../core/worker_config.js';
import type { ClientRegistry } from '../../../gateway/client_registry/client_registry.js';
import { originFamily } from '../../../gateway/client_registry/cors_origins.js';
import { clientSchema } from '../../../gateway/config/schema.js';
import { corsTestRegistry, setCorsOrigins } from '../../helpers/cors_registry.js';
import { startRedisServer } from '../../helpers/redis_server.js';

const clientId = 'spa';
const origins = ['https://x.example', 'https://y.example', 'https://z.example'] as const;
const [x, y] = origins;

function spa(allowedCorsOrigins: readonly string[]): ClientConfig {
  return clientSchema.parse({
    clientId,
    requireClientSecret: false,
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['api1'],
    allowedCorsOrigins,
  }) as ClientConfig;
}

const isIndexEntry = (key: StoreKey): boolean => key.family?.startsWith('cors-') === true;

/** `store`, whose index writes (`set`, `delete` of an index entry) first wait for `before(method, key)`. */
function delayedIndex(store: Store, before: (method: 'set' | 'delete', key: StoreKey) => Promise<void>): Store {
  return new Proxy(store, {
    get: (target, name) => {
      // The store's methods use its private fields: called on the store, not on the proxy.
      const value: unknown = Reflect.get(target, name);
      if (typeof value !== 'function') return value;
      const method = (value as (...args: unknown[]) => unknown).bind(target);
      if (name !== 'set' && name !== 'delete') return method;
      return async (key: StoreKey, ...rest: unknown[]) => {
        if (isIndexEntry(key)) await before(name, key);
        return await method(key, ...rest);
      };
    },
  });
}

/** The origins whose index family names the client, and those a lookup (cache emptied) allows. */
async function indexed(store: Store, registry: ClientRegistry): Promise<{ entries: string[]; allowed: string[] }> {
  const entries: string[] = [];
  const allowed: string[] = [];
  registry.origins.invalidate();
  for (const origin of origins) {
    const family = await store.familyRecords<{ clientId: string; origin: string }>(originFamily(origin), 'client');
    if (family.some((entry) => entry.clientId === clientId && entry.origin === origin)) entries.push(origin);
    if (await registry.origins.lookup(origin)) allowed.push(origin);
  }
  return { entries, allowed };
}

/** Park–Miller: the random delays are the same on every run. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 48_271) % 2_147_483_647;
    return state / 2_147_483_647;
  };
}

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);

const stores: Readonly<Record<string, () => Store>> = {
  memory: () => new MemoryStore(),
  redis: () => new RedisStore({ url: redis.url, keyPrefix: `cors-index-order-${process.pid}-${Math.random()}:`, commandTimeoutMs: 5000 }),
};

for (const [name, makeStore] of Object.entries(stores)) {
  t.test(`${name}: an earlier change's removal landing after a later change's write leaves the origin allowed`, async (t) => {
    const backing = makeStore();
    t.teardown(() => backing.close());
    let hold: { reached: () => void; released: Promise<void> } | undefined;
    const store = delayedIndex(backing, async (method, key) => {
      const held = hold;
      if (method !== 'delete' || held === undefined || key.family !== originFamily(x)) return;
      hold = undefined;
      held.reached();
      await held.released;
    });
    const registry = corsTestRegistry(store);
    t.teardown(() => registry.stop());
    t.ok(await registry.add(spa([x])), 'the client created, listing X');

    let reached = (): void => {};
    let release = (): void => {};
    const removalReached = new Promise<void>((resolve) => (reached = resolve));
    hold = { reached, released: new Promise<void>((resolve) => (release = resolve)) };
    const first = setCorsOrigins(registry, clientId, [y]);
    await removalReached;
    t.same((await registry.read(clientId))?.config.allowedCorsOrigins, [y], "A's record is written, its removal of X held");
    t.equal((await setCorsOrigins(registry, clientId, [x])).status, 'written', 'B, written whole meanwhile');
    release();
    t.equal((await first).status, 'written', 'then A ends');

    t.same((await registry.read(clientId))?.config.allowedCorsOrigins, [x], 'the client lists X');
    t.same(await indexed(backing, registry), { entries: [x], allowed: [x] }, 'X indexed and allowed; Y neither');
  });

  t.test(`${name}: two changes at once, 25 times, index writes delayed at random: the index is the last client's`, async (t) => {
    const backing = makeStore();
    t.teardown(() => backing.close());
    const random = seeded(name === 'memory' ? 7 : 11);
    const store = delayedIndex(backing, () => new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 12))));
    const registry = corsTestRegistry(store);
    t.teardown(() => registry.stop());
    t.ok(await registry.add(spa([x])), 'the client created, listing X');
    const choices: readonly (readonly string[])[] = [[x], [y], [x, y], [], [origins[2]], [y, origins[2]]];
    const wrong: string[] = [];
    for (let round = 0; round < 25; round += 1) {
      const a = choices[Math.floor(random() * choices.length)] as readonly string[];
      const b = choices[Math.floor(random() * choices.length)] as readonly string[];
      const outcomes = await Promise.all([setCorsOrigins(registry, clientId, a), setCorsOrigins(registry, clientId, b)]);
      if (outcomes.some((outcome) => outcome.status !== 'written')) wrong.push(`round ${round}: ${JSON.stringify(outcomes)}`);
      const listed = [...((await registry.read(clientId))?.config.allowedCorsOrigins ?? [])];
      const expected = origins.filter((origin) => listed.includes(origin));
      const found = await indexed(backing, registry);
      if (JSON.stringify(found) !== JSON.stringify({ entries: expected, allowed: expected })) {
        wrong.push(
          `round ${round}: ${JSON.stringify(a)} and ${JSON.stringify(b)} at once, client lists ${JSON.stringify(listed)}: ${JSON.stringify(found)}`,
        );
      }
    }
    t.same(wrong, [], 'after every pair: exactly the listed origins indexed and allowed');
  });
}
