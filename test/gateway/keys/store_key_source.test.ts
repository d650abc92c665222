// Store-kept keys racing (gateway/keys/store_key_source.ts): of gateways and commands that add
// the successor of one key at the same moment, exactly one key is created, on Redis and in memory.
import t from 'tap';
import { pino } from 'pino';
import { validateConfig } from '../../../gateway/config/load.js';
import { KeyRing } from '../../../gateway/keys/key_ring.js';
import { rotationPolicyOf } from '../../../gateway/config/signing_rotation.js';
import { generateSigningKey } from '../../../gateway/keys/key_loader.js';
import { StoreKeySource } from '../../../gateway/keys/store_key_source.js';
import { createStore } from '../../../core/store/create_store.js';
import { MemoryStore } from '../../../core/store/memory_store.js';
import type { Store } from '../../../core/store/store.js';
import { startRedisServer } from '../../helpers/redis_server.js';

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning !== null) t.comment(redis.warning);

const policy = { everyMs: null, propagationMs: 1000, retentionMs: 3_600_000 } satisfies ReturnType<typeof rotationPolicyOf>;
const firstKey = async () => ({ key: await generateSigningKey('ES256'), createdAt: Date.now() });

for (const [name, open] of [
  ['Redis', () => createStore({ type: 'redis', url: redis.url, keyPrefix: `race${Date.now()}:`, commandTimeoutMs: 1000 })],
  ['memory', () => new MemoryStore()],
] as const) {
  t.test(`${name}: twenty racing rotations create one key, and every racer adopts it`, async (t) => {
    const shared: Store = open();
    t.teardown(() => shared.close());
    // Each source stands for one gateway (or one `tessera keys rotate`).
    const sources = Array.from({ length: 20 }, () => new StoreKeySource(shared, 'ES256', policy, firstKey));
    await sources[0]?.load();
    const outcomes = await Promise.all(sources.map((s) => s.rotate()));
    t.equal(outcomes.filter((o) => o.created).length, 1, 'exactly one created a key');
    t.equal(new Set(outcomes.map((o) => o.key.kid)).size, 1, 'all name the same key');
    const sets = await Promise.all(sources.map((s) => s.load()));
    t.equal(sets[0]?.keys.length, 2, 'the first key and its one successor');
    for (const set of sets) t.same(set, sets[0], 'every gateway computes the same set and order');
  });
}

t.test('Redis: of twenty sources finding the store empty at once, one creates the first key, the others adopt it', async (t) => {
  const shared: Store = createStore({ type: 'redis', url: redis.url, keyPrefix: `first${Date.now()}:`, commandTimeoutMs: 1000 });
  t.teardown(() => shared.close());
  const sources = Array.from({ length: 20 }, () => new StoreKeySource(shared, 'ES256', policy, firstKey));
  const sets = await Promise.all(sources.map((s) => s.load()));
  t.same(sources.map((s) => s.firstKey).sort(), ['created', ...Array<string>(19).fill('adopted')].sort(), 'one created, nineteen adopted');
  t.equal(new Set(sets.map((set) => set.keys[0]?.kid)).size, 1, 'all publish the same key');
  t.equal((await sources[0]?.load(), sources[0]?.firstKey), undefined, 'a later load finds the set');
});

t.test(
  'two gateways starting together on an empty Redis: one logs that it created the first key, the other that it adopted it',
  async (t) => {
    const config = validateConfig(
      {
        issuer: 'http://127.0.0.1:5000',
        store: { type: 'redis', url: redis.url, keyPrefix: `ring${Date.now()}:`, commandTimeoutMs: 5000 },
      },
      { configDir: process.cwd(), env: {} },
    );
    const shared: Store = createStore(config.store);
    t.teardown(() => shared.close());
    const lines: { msg: string; kid?: string }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as { msg: string }) });
    // Redis keeps the keys: the development key folder is never written.
    const devKeyDir = t.testdir({});
    const rings = await Promise.all([0, 1].map(() => KeyRing.open({ config, store: shared, logger, devKeyDir, watch: false })));
    t.teardown(() => {
      for (const ring of rings) ring.stop();
    });
    const created = lines.filter((l) => /created the first one/.test(l.msg));
    const adopted = lines.filter((l) => /adopted the existing one/.test(l.msg));
    t.equal(created.length, 1, 'one gateway created it');
    t.equal(adopted.length, 1, 'the other adopted it');
    t.equal(adopted[0]?.kid, created[0]?.kid, 'the same key');
  },
);
