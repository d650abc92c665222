import t from 'tap';
import { once } from 'node:events';
import { Piscina } from 'piscina';
import { MemoryStoreHost } from '../../../gateway/dispatch/memory_store_host.js';
import { MemoryStore } from '../../../core/store/memory_store.js';
import type { StoreKey } from '../../../core/store/store.js';
import { newId, type TapTest } from '../../core/store/store_conformance.js';

const workerFile = new URL('../../fixtures/memory_store_pool_worker.mjs', import.meta.url);

interface TaskResult {
  threadId: number;
  status: string;
}

/** A pool like the gateway's (fixed threads, no atomics) whose workers the host serves. */
function startPool(t: TapTest, threads: number): { store: MemoryStore; pool: Piscina } {
  const store = new MemoryStore();
  const host = new MemoryStoreHost(store);
  const pool = new Piscina({
    filename: workerFile.href,
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: Number.POSITIVE_INFINITY,
    atomics: 'disabled',
  });
  pool.on('message', host.acceptOffer);
  t.teardown(async () => {
    await pool.destroy();
    host.close();
    await store.close();
  });
  return { store, pool };
}

async function codes(store: MemoryStore, count: number): Promise<StoreKey[]> {
  const keys = Array.from({ length: count }, (): StoreKey => ({ kind: 'code', id: newId() }));
  for (const key of keys) await store.set(key, { clientId: 'web' }, 60_000);
  return keys;
}

t.test('every worker of the pool reaches the main thread store over its own port', async (t) => {
  const { store, pool } = startPool(t, 2);
  const keys = await codes(store, 40);
  // Each code twice, all at once: whichever threads run them, exactly one redemption wins.
  const results = (await Promise.all([...keys, ...keys].map((key) => pool.run({ op: 'consume', key })))) as TaskResult[];
  t.equal(new Set(results.map((r) => r.threadId)).size, 2, 'both threads ran tasks');
  t.equal(results.filter((r) => r.status === 'consumed').length, 40);
  t.equal(results.filter((r) => r.status === 'replayed').length, 40);
  t.same(await store.consume(keys[0] as StoreKey), { status: 'replayed', value: { clientId: 'web' } }, 'the state is the main thread’s');
});

t.test('a worker that Piscina starts in place of a crashed one gets a port too', async (t) => {
  const { store, pool } = startPool(t, 1);
  const [first, second] = (await codes(store, 2)) as [StoreKey, StoreKey];
  const before = (await pool.run({ op: 'consume', key: first })) as TaskResult;
  t.equal(before.status, 'consumed');

  const replaced = once(pool, 'workerCreate');
  await t.rejects(pool.run({ op: 'crash' }), /exited/);
  await replaced;
  const after = (await pool.run({ op: 'consume', key: second })) as TaskResult;
  t.not(after.threadId, before.threadId, 'a new thread');
  t.equal(after.status, 'consumed');
  t.equal(((await pool.run({ op: 'consume', key: first })) as TaskResult).status, 'replayed', 'and it sees what the old thread did');
});
