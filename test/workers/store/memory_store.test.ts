import t from 'tap';
import { MemoryStore } from '../../../workers/store/memory_store.js';
import { FamilyRevokedError } from '../../../workers/store/store.js';
import type { StoreKey } from '../../../workers/store/store.js';
import { newFamily, newId, runStoreConformance } from './store_conformance.js';

/** A clock the test moves by hand. */
function makeClock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let current = start;
  return { now: () => current, advance: (ms) => (current += ms) };
}

t.test('conformance', async (t) => {
  runStoreConformance(t, () => new MemoryStore());
});

t.test('with an injected clock', async (t) => {
  t.test('a record is live until the last millisecond of its TTL and gone at its end', async (t) => {
    const clock = makeClock();
    const store = new MemoryStore({ now: clock.now });
    t.teardown(() => store.close());
    const key: StoreKey = { kind: 'code', id: newId() };
    await store.set(key, { v: 1 }, 300_000);
    clock.advance(299_999);
    t.same(await store.get(key), { v: 1 });
    clock.advance(1);
    t.equal(await store.get(key), null);
  });

  t.test('a fractional TTL rounds up to the next millisecond', async (t) => {
    const clock = makeClock();
    const store = new MemoryStore({ now: clock.now });
    t.teardown(() => store.close());
    const key: StoreKey = { kind: 'misc', id: newId() };
    await store.set(key, 1, 1.2);
    clock.advance(1);
    t.equal(await store.get(key), 1);
    clock.advance(1);
    t.equal(await store.get(key), null);
  });

  t.test('consuming keeps the TTL: a replay is reported until the original expiry', async (t) => {
    const clock = makeClock();
    const store = new MemoryStore({ now: clock.now });
    t.teardown(() => store.close());
    const key: StoreKey = { kind: 'code', id: newId() };
    await store.set(key, { v: 1 }, 1000);
    clock.advance(600);
    t.same(await store.consume(key), { status: 'consumed', value: { v: 1 } });
    clock.advance(399);
    t.same(await store.consume(key), { status: 'replayed', value: { v: 1 } });
    clock.advance(1);
    t.same(await store.consume(key), { status: 'missing' });
  });

  t.test('a counter window is fixed by its first increment', async (t) => {
    const clock = makeClock();
    const store = new MemoryStore({ now: clock.now });
    t.teardown(() => store.close());
    t.same(await store.increment('pw:alice', 60_000), { count: 1, resetInMs: 60_000 });
    clock.advance(59_000);
    t.same(await store.increment('pw:alice', 60_000), { count: 2, resetInMs: 1000 });
    clock.advance(1000);
    t.same(await store.increment('pw:alice', 60_000), { count: 1, resetInMs: 60_000 });
  });

  t.test('a revoked family refuses writes until the revocation expires', async (t) => {
    const clock = makeClock();
    const store = new MemoryStore({ now: clock.now });
    t.teardown(() => store.close());
    const family = newFamily();
    await store.revokeFamily(family, 10_000);
    clock.advance(9_999);
    await t.rejects(store.set({ kind: 'rt', id: newId(), family }, 1, 1000), FamilyRevokedError);
    clock.advance(1);
    await store.set({ kind: 'rt', id: newId(), family }, 1, 1000);
    t.equal(await store.isFamilyRevoked(family), false);
  });

  t.test('a second revocation with a shorter TTL does not shorten the first', async (t) => {
    const clock = makeClock();
    const store = new MemoryStore({ now: clock.now });
    t.teardown(() => store.close());
    const family = newFamily();
    await store.revokeFamily(family, 10_000);
    await store.revokeFamily(family, 1000);
    clock.advance(5000);
    t.equal(await store.isFamilyRevoked(family), true);
  });

  t.test('revokeFamily does not count members that already expired', async (t) => {
    const clock = makeClock();
    const store = new MemoryStore({ now: clock.now });
    t.teardown(() => store.close());
    const family = newFamily();
    await store.set({ kind: 'rt', id: newId(), family }, 1, 1000);
    await store.set({ kind: 'rt', id: newId(), family }, 2, 5000);
    clock.advance(2000);
    t.equal(await store.revokeFamily(family, 10_000), 1);
  });
});

t.test('the periodic sweep drops expired records that nobody reads', async (t) => {
  const clock = makeClock();
  const store = new MemoryStore({ now: clock.now, sweepIntervalMs: 20 });
  t.teardown(() => store.close());
  await store.set({ kind: 'code', id: newId() }, { v: 1 }, 1000);
  await store.set({ kind: 'code', id: newId() }, { v: 2 }, 5000);
  t.equal(store.size, 2);
  clock.advance(1000);
  await new Promise((resolve) => setTimeout(resolve, 80));
  t.equal(store.size, 1);
});
