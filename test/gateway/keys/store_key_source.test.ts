// Store-kept keys racing (gateway/keys/store_key_source.ts): of gateways and commands that add
// the successor of one key at the same moment, exactly one key is created, on Redis and in memory.
import t from 'tap';
import { rotationPolicyOf } from '../../../gateway/config/signing_rotation.js';
import { generateSigningKey } from '../../../gateway/key_loader.js';
import { StoreKeySource } from '../../../gateway/keys/store_key_source.js';
import { createStore } from '../../../workers/store/create_store.js';
import { MemoryStore } from '../../../workers/store/memory_store.js';
import type { Store } from '../../../workers/store/store.js';
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
