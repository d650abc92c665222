import t from 'tap';
import { MemoryStore } from '../../../core/store/memory_store.js';
import { FamilyRevokedError } from '../../../core/store/store.js';
import type { StoreKey } from '../../../core/store/store.js';
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

t.test('store.maxRecords: a flood of device codes cannot grow the memory store without end', async (t) => {
  t.test('at the cap the oldest device codes go first; other records stay', async (t) => {
    const store = new MemoryStore({ maxRecords: 10 });
    t.teardown(() => store.close());
    const refresh = { kind: 'rt', id: newId(), family: newFamily() } as const;
    await store.set(refresh, { v: 'kept' }, 60_000);
    const devices: StoreKey[] = [];
    for (let i = 0; i < 25; i++) {
      const key: StoreKey = { kind: 'dc', id: newId(), family: newFamily() };
      devices.push(key);
      await store.set(key, { n: i }, 60_000);
      await store.set({ kind: 'uc', id: newId() }, { n: i }, 60_000);
    }
    t.ok(store.size <= 10, `${store.size} records held`);
    t.equal(store.evicted, 41, 'every write past the cap dropped one device record');
    t.same(await store.get(refresh), { v: 'kept' }, 'the refresh token was not touched');
    t.equal(await store.get(devices[0] as StoreKey), null, 'the oldest device code is gone');
    t.same(await store.get(devices[24] as StoreKey), { n: 24 }, 'the newest is there');
  });

  t.test('full of other records: a new record is refused as unavailable, and a rotation consumes nothing', async (t) => {
    const store = new MemoryStore({ maxRecords: 3 });
    t.teardown(() => store.close());
    const family = newFamily();
    const old = { kind: 'rt', id: newId(), family } as const;
    await store.set(old, { v: 1 }, 60_000);
    await store.set({ kind: 'code', id: newId() }, { v: 2 }, 60_000);
    await store.set({ kind: 'code', id: newId() }, { v: 3 }, 60_000);
    await t.rejects(store.set({ kind: 'code', id: newId() }, { v: 4 }, 60_000), { code: 'store_unavailable' });
    await t.rejects(store.rotate(old, { kind: 'rt', id: newId(), family }, { v: 5 }, 60_000), { code: 'store_unavailable' });
    t.same(await store.get(old), { v: 1 }, 'the refresh token is still live: its client can retry');
    await store.set(old, { v: 6 }, 60_000);
    t.same(await store.get(old), { v: 6 }, 'overwriting an existing record needs no room');
  });
});
