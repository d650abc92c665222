/**
 * The rules every {@link Store} keeps (docs/storage.md: both implementations pass the same conformance
 * tests). Each test file runs this suite against one implementation.
 *
 * Races are real: 50 calls are started in one tick and awaited together.
 */
import { FamilyRevokedError, StoreUnavailableError, subFamily } from '../../../core/store/store.js';
import type { ConsumeResult, Store, StoreKey } from '../../../core/store/store.js';
import { hashHandle, newHandle } from '../../../core/store/handle.js';

/** The `t` a tap subtest callback receives. */
export type TapTest = Parameters<Parameters<typeof import('tap')['test']>[0]>[0];

/**
 * Creates a fresh store for one subtest. It may register teardowns of its own on `t` (a server
 * behind the store); the suite closes the store itself.
 */
export type MakeStore = (t: TapTest) => Store | Promise<Store>;

const concurrency = 50;
/** Short TTLs with real waits: long enough for a round trip, short enough for a fast suite. */
const shortTtlMs = 150;
const pastShortTtlMs = 300;
const longTtlMs = 60_000;

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A fresh hashed id, as the grants produce them. */
export function newId(): string {
  return hashHandle(newHandle());
}

/** A fresh family name, so subtests never see each other's state. */
export function newFamily(): string {
  return `fam-${newHandle(32).slice(0, 16)}`;
}

const nested = {
  clientId: 'web',
  scope: ['openid', 'api1'],
  subject: { id: '818727', claims: { name: 'Alice Smith', email_verified: true, age: 42, ratio: 0.5 } },
  nothing: null,
  issuedAt: new Date('2025-01-02T03:04:05.678Z'),
  unicode: 'Ünïcødé ✓',
  empty: { list: [], map: {} },
};

function countStatuses<T>(results: ConsumeResult<T>[]): Record<ConsumeResult<T>['status'], number> {
  const counts = { consumed: 0, replayed: 0, missing: 0 };
  for (const result of results) counts[result.status] += 1;
  return counts;
}

/**
 * Runs the conformance suite as subtests of `t`. Every subtest gets its own store from
 * `makeStore` and closes it in its teardown.
 */
export function runStoreConformance(t: TapTest, makeStore: MakeStore): void {
  const open = async (tt: TapTest): Promise<Store> => {
    const store = await makeStore(tt);
    tt.teardown(() => store.close());
    return store;
  };

  t.test('set then get returns an equal copy of a nested object', async (tt) => {
    const store = await open(tt);
    const key: StoreKey = { kind: 'code', id: newId() };
    await store.set(key, nested, longTtlMs);
    tt.same(await store.get(key), nested);
    tt.ok((await store.get<typeof nested>(key))?.issuedAt instanceof Date, 'a Date comes back as a Date');
  });

  t.test('get of a key never written resolves null', async (tt) => {
    const store = await open(tt);
    tt.equal(await store.get({ kind: 'code', id: newId() }), null);
  });

  t.test('set overwrites an existing record', async (tt) => {
    const store = await open(tt);
    const key: StoreKey = { kind: 'misc', id: newId() };
    await store.set(key, { v: 1 }, longTtlMs);
    await store.set(key, { v: 2 }, longTtlMs);
    tt.same(await store.get(key), { v: 2 });
  });

  t.test('delete removes a record and resolves whether one existed', async (tt) => {
    const store = await open(tt);
    const key: StoreKey = { kind: 'rt', id: newId(), family: newFamily() };
    await store.set(key, { v: 1 }, longTtlMs);
    tt.equal(await store.delete(key), true);
    tt.equal(await store.get(key), null);
    tt.equal(await store.delete(key), false);
  });

  t.test('a stored record cannot be changed through the object written or read', async (tt) => {
    const store = await open(tt);
    const key: StoreKey = { kind: 'misc', id: newId() };
    const value = { list: [1, 2], inner: { a: 'x' } };
    await store.set(key, value, longTtlMs);
    value.list.push(3);
    value.inner.a = 'changed';
    const read = await store.get<typeof value>(key);
    tt.same(read, { list: [1, 2], inner: { a: 'x' } });
    read?.list.push(4);
    tt.same(await store.get(key), { list: [1, 2], inner: { a: 'x' } });
  });

  t.test('a record expires when its TTL ends', async (tt) => {
    const store = await open(tt);
    const key: StoreKey = { kind: 'code', id: newId() };
    await store.set(key, { v: 1 }, shortTtlMs);
    tt.same(await store.get(key), { v: 1 });
    await sleep(pastShortTtlMs);
    tt.equal(await store.get(key), null);
    tt.same(await store.consume(key), { status: 'missing' });
  });

  t.test('a TTL that is not a positive number is refused with a RangeError', async (tt) => {
    const store = await open(tt);
    const key: StoreKey = { kind: 'misc', id: newId() };
    await tt.rejects(store.set(key, 1, 0), RangeError);
    await tt.rejects(store.set(key, 1, -5), RangeError);
    await tt.rejects(store.set(key, 1, Number.NaN), RangeError);
    await tt.rejects(store.increment('x', 0), RangeError);
    tt.equal(await store.get(key), null);
  });

  t.test('consume of a missing key resolves missing', async (tt) => {
    const store = await open(tt);
    tt.same(await store.consume({ kind: 'code', id: newId() }), { status: 'missing' });
  });

  t.test('of 50 concurrent consumers exactly one consumes and 49 see a replay of the same value', async (tt) => {
    const store = await open(tt);
    const key: StoreKey = { kind: 'code', id: newId() };
    await store.set(key, nested, longTtlMs);
    const results = await Promise.all(Array.from({ length: concurrency }, () => store.consume<typeof nested>(key)));
    tt.same(countStatuses(results), { consumed: 1, replayed: concurrency - 1, missing: 0 });
    for (const result of results) tt.same(result.status === 'missing' ? null : result.value, nested);
  });

  t.test('a consumed record is hidden from get and replays until its TTL ends', async (tt) => {
    const store = await open(tt);
    const key: StoreKey = { kind: 'dc', id: newId() };
    await store.set(key, { v: 1 }, shortTtlMs);
    tt.same(await store.consume(key), { status: 'consumed', value: { v: 1 } });
    tt.equal(await store.get(key), null);
    tt.same(await store.consume(key), { status: 'replayed', value: { v: 1 } });
    await sleep(pastShortTtlMs);
    tt.same(await store.consume(key), { status: 'missing' });
  });

  t.test('set over a consumed record makes it live again', async (tt) => {
    const store = await open(tt);
    const key: StoreKey = { kind: 'dc', id: newId() };
    await store.set(key, { v: 1 }, longTtlMs);
    await store.consume(key);
    await store.set(key, { v: 2 }, longTtlMs);
    tt.same(await store.get(key), { v: 2 });
    tt.same(await store.consume(key), { status: 'consumed', value: { v: 2 } });
  });

  t.test('of 50 concurrent rotations exactly one wins and exactly one successor exists', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const oldKey: StoreKey = { kind: 'rt', id: newId(), family };
    await store.set(oldKey, { gen: 0 }, longTtlMs);
    const successors = Array.from({ length: concurrency }, (): StoreKey => ({ kind: 'rt', id: newId(), family }));
    const results = await Promise.all(successors.map((newKey, i) => store.rotate(oldKey, newKey, { gen: 1, by: i }, longTtlMs)));
    tt.same(countStatuses(results), { consumed: 1, replayed: concurrency - 1, missing: 0 });
    const winner = results.findIndex((r) => r.status === 'consumed');
    const stored = await Promise.all(successors.map((key) => store.get(key)));
    tt.same(
      stored.flatMap((value, i) => (value === null ? [] : [i])),
      [winner],
      'only the winner wrote its successor',
    );
    tt.same(stored[winner], { gen: 1, by: winner });
    tt.same(await store.consume(oldKey), { status: 'replayed', value: { gen: 0 } });
  });

  t.test('rotate between two standalone keys consumes the old one and writes the new one', async (tt) => {
    const store = await open(tt);
    const oldKey: StoreKey = { kind: 'dc', id: newId() };
    const newKey: StoreKey = { kind: 'dc', id: newId() };
    await store.set(oldKey, { state: 'pending' }, longTtlMs);
    tt.same(await store.rotate(oldKey, newKey, { state: 'approved' }, longTtlMs), {
      status: 'consumed',
      value: { state: 'pending' },
    });
    tt.same(await store.get(newKey), { state: 'approved' });
    tt.equal(await store.get(oldKey), null);
  });

  t.test('rotate of a missing or already rotated token writes nothing', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const missingKey: StoreKey = { kind: 'rt', id: newId(), family };
    const firstSuccessor: StoreKey = { kind: 'rt', id: newId(), family };
    tt.same(await store.rotate(missingKey, firstSuccessor, { gen: 1 }, longTtlMs), { status: 'missing' });
    tt.equal(await store.get(firstSuccessor), null);

    const oldKey: StoreKey = { kind: 'rt', id: newId(), family };
    await store.set(oldKey, { gen: 0 }, longTtlMs);
    await store.consume(oldKey);
    const lateSuccessor: StoreKey = { kind: 'rt', id: newId(), family };
    tt.same(await store.rotate(oldKey, lateSuccessor, { gen: 1 }, longTtlMs), { status: 'replayed', value: { gen: 0 } });
    tt.equal(await store.get(lateSuccessor), null);
  });

  t.test('rotate into a revoked family resolves missing and writes nothing', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const oldKey: StoreKey = { kind: 'rt', id: newId(), family };
    const newKey: StoreKey = { kind: 'rt', id: newId(), family };
    await store.set(oldKey, { gen: 0 }, longTtlMs);
    tt.equal(await store.revokeFamily(family, longTtlMs), 1);
    tt.same(await store.rotate(oldKey, newKey, { gen: 1 }, longTtlMs), { status: 'missing' });
    tt.equal(await store.get(newKey), null);
    tt.equal(await store.get(oldKey), null);
  });

  t.test('rotate refuses keys of different families with a plain Error', async (tt) => {
    const store = await open(tt);
    const oldKey: StoreKey = { kind: 'rt', id: newId(), family: newFamily() };
    const newKey: StoreKey = { kind: 'rt', id: newId(), family: newFamily() };
    await store.set(oldKey, { gen: 0 }, longTtlMs);
    const err = await store.rotate(oldKey, newKey, { gen: 1 }, longTtlMs).then(
      () => null,
      (e: unknown) => e,
    );
    tt.type(err, Error);
    tt.notOk(err instanceof StoreUnavailableError || err instanceof FamilyRevokedError, 'not a store error');
    tt.same(await store.get(oldKey), { gen: 0 }, 'the old record is untouched');
    await tt.rejects(store.rotate(oldKey, { kind: 'rt', id: newId() }, { gen: 1 }, longTtlMs), Error);
  });

  t.test('a rotation writes its companion record in the same step, and only when it wins', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const issued = subFamily(family, 'at');
    const oldKey: StoreKey = { kind: 'rt', id: newId(), family };
    await store.set(oldKey, { gen: 0 }, longTtlMs);
    const successors = Array.from({ length: concurrency }, (): StoreKey => ({ kind: 'rt', id: newId(), family }));
    const companions = Array.from({ length: concurrency }, (): StoreKey => ({ kind: 'at', id: newId(), family: issued }));
    const results = await Promise.all(
      successors.map((newKey, i) =>
        store.rotate(oldKey, newKey, { gen: 1 }, longTtlMs, { key: companions[i] as StoreKey, value: { by: i }, ttlMs: longTtlMs }),
      ),
    );
    tt.same(countStatuses(results), { consumed: 1, replayed: concurrency - 1, missing: 0 });
    const winner = results.findIndex((r) => r.status === 'consumed');
    const written = await Promise.all(companions.map((key) => store.get(key)));
    tt.same(
      written.flatMap((value, i) => (value === null ? [] : [i])),
      [winner],
      "only the winner's companion was written",
    );
    tt.same(await store.familyRecords(issued, 'at'), [{ by: winner }], 'it is a record of its sub-family');
    tt.same(await store.familyRecords(family, 'at'), [], 'not of the family itself');

    // Revoking the family leaves its sub-family: the list of what to deny survives the revocation.
    tt.equal(await store.revokeFamily(family, longTtlMs), 2, 'the old and the new refresh token');
    tt.same(await store.familyRecords(issued, 'at'), [{ by: winner }]);
    const late: StoreKey = { kind: 'at', id: newId(), family: issued };
    tt.same(
      await store.rotate(successors[winner] as StoreKey, { kind: 'rt', id: newId(), family }, { gen: 2 }, longTtlMs, {
        key: late,
        value: { by: 'late' },
        ttlMs: longTtlMs,
      }),
      { status: 'missing' },
      'a revoked family refuses the rotation',
    );
    tt.equal(await store.get(late), null, 'and its companion');

    const missingCompanion: StoreKey = { kind: 'at', id: newId(), family: issued };
    const otherFamily = newFamily();
    tt.same(
      await store.rotate(
        { kind: 'rt', id: newId(), family: otherFamily },
        { kind: 'rt', id: newId(), family: otherFamily },
        { gen: 1 },
        longTtlMs,
        {
          key: { kind: 'at', id: missingCompanion.id, family: subFamily(otherFamily, 'at') },
          value: { by: 'missing' },
          ttlMs: longTtlMs,
        },
      ),
      { status: 'missing' },
    );
    tt.same(await store.familyRecords(subFamily(otherFamily, 'at'), 'at'), [], 'a rotation of a missing record writes no companion');
  });

  t.test("rotate refuses a companion outside the successor's family with a plain Error", async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const oldKey: StoreKey = { kind: 'rt', id: newId(), family };
    const newKey: StoreKey = { kind: 'rt', id: newId(), family };
    await store.set(oldKey, { gen: 0 }, longTtlMs);
    const refused = [
      { key: { kind: 'at', id: newId(), family: subFamily(newFamily(), 'at') }, value: 1, ttlMs: longTtlMs },
      { key: { kind: 'at', id: newId() }, value: 1, ttlMs: longTtlMs },
      { key: newKey, value: 1, ttlMs: longTtlMs },
    ] as const;
    for (const companion of refused) {
      const err = await store.rotate(oldKey, newKey, { gen: 1 }, longTtlMs, companion).then(
        () => null,
        (e: unknown) => e,
      );
      tt.type(err, Error, JSON.stringify(companion.key));
      tt.notOk(err instanceof StoreUnavailableError || err instanceof FamilyRevokedError, 'not a store error');
    }
    tt.same(await store.get(oldKey), { gen: 0 }, 'the old record is untouched');
    tt.equal(await store.get(newKey), null, 'and no successor written');
    const standalone = store.rotate({ kind: 'dc', id: newId() }, { kind: 'dc', id: newId() }, 1, longTtlMs, {
      key: { kind: 'at', id: newId(), family: subFamily(family, 'at') },
      value: 1,
      ttlMs: longTtlMs,
    });
    await tt.rejects(standalone, Error, 'a standalone rotation has no family to share');
  });

  t.test('a rotation writes a list of companions in its step: records of the family and of its sub-family', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const oldKey: StoreKey = { kind: 'rt', id: newId(), family };
    await store.set(oldKey, { gen: 0 }, longTtlMs);
    const successors = Array.from({ length: concurrency }, (): StoreKey => ({ kind: 'rt', id: newId(), family }));
    const companionsOf = (i: number) => [
      { key: { kind: 'at', id: newId(), family: subFamily(family, 'at') } as StoreKey, value: { at: i }, ttlMs: longTtlMs },
      { key: { kind: 'retry', id: `${oldKey.id}-${i}`, family } as StoreKey, value: { retry: i }, ttlMs: shortTtlMs },
    ];
    const companions = successors.map((_, i) => companionsOf(i));
    const results = await Promise.all(successors.map((newKey, i) => store.rotate(oldKey, newKey, { gen: 1 }, longTtlMs, companions[i])));
    tt.same(countStatuses(results), { consumed: 1, replayed: concurrency - 1, missing: 0 });
    const winner = results.findIndex((r) => r.status === 'consumed');
    const written = await Promise.all(companions.flat().map((c) => store.get(c.key)));
    tt.same(
      written.filter((value) => value !== null),
      [{ at: winner }, { retry: winner }],
      "both of the winner's companions, and no loser's",
    );
    const retry = companions[winner]?.[1]?.key as StoreKey;
    await sleep(pastShortTtlMs);
    tt.equal(await store.get(retry), null, 'each companion keeps its own TTL');
    tt.equal(
      await store
        .rotate({ kind: 'rt', id: newId(), family }, { kind: 'rt', id: newId(), family }, 1, longTtlMs, [
          { key: retry, value: 1, ttlMs: longTtlMs },
          { key: retry, value: 2, ttlMs: longTtlMs },
        ])
        .then(
          () => null,
          (e: unknown) => (e instanceof Error && !(e instanceof StoreUnavailableError) ? 'plain Error' : e),
        ),
      'plain Error',
      'two companions with one key are refused',
    );
  });

  t.test('writeWhileLive writes only while every guard is live, in one step', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const issued = subFamily(family, 'at');
    const live: StoreKey = { kind: 'retry', id: newId(), family };
    const successor: StoreKey = { kind: 'rt', id: newId(), family };
    await store.set(live, { sealed: 1 }, longTtlMs);
    await store.set(successor, { gen: 1 }, longTtlMs);
    const record = (by: string) => ({ key: { kind: 'at', id: newId(), family: issued } as StoreKey, value: { by }, ttlMs: longTtlMs });

    const first = record('first');
    tt.equal(await store.writeWhileLive([live, successor], first), true, 'both guards live');
    tt.same(await store.get(first.key), { by: 'first' });
    tt.same(await store.familyRecords(issued, 'at'), [{ by: 'first' }], 'the record joins its family');
    tt.equal(await store.writeWhileLive([live, successor]), true, 'a check alone writes nothing and answers the same');

    const missing = record('missing');
    tt.equal(await store.writeWhileLive([live, { kind: 'rt', id: newId(), family }], missing), false, 'a missing guard');
    tt.equal(await store.get(missing.key), null, 'nothing written');

    const consumedGuard = record('consumed');
    tt.equal((await store.consume(successor)).status, 'consumed');
    tt.equal(await store.writeWhileLive([live, successor], consumedGuard), false, 'a consumed guard');
    tt.equal(await store.get(consumedGuard.key), null);

    const short: StoreKey = { kind: 'retry', id: newId(), family };
    const other: StoreKey = { kind: 'rt', id: newId(), family };
    await store.set(short, 1, shortTtlMs);
    await store.set(other, 1, longTtlMs);
    await sleep(pastShortTtlMs);
    const expired = record('expired');
    tt.equal(await store.writeWhileLive([short, other], expired), false, 'an expired guard');
    tt.equal(await store.get(expired.key), null);

    // Of concurrent checks against a consume of their guard, those before it write, none after.
    const guard: StoreKey = { kind: 'rt', id: newId(), family };
    await store.set(guard, 1, longTtlMs);
    const racing = Array.from({ length: concurrency }, (_, i) => record(`race-${i}`));
    const [outcomes] = await Promise.all([Promise.all(racing.map((r) => store.writeWhileLive([guard], r))), store.consume(guard)]);
    const stored = await Promise.all(racing.map((r) => store.get(r.key)));
    tt.same(
      stored.map((value) => value !== null),
      outcomes,
      'a record is stored exactly when its call answered true',
    );

    await store.revokeFamily(family, longTtlMs);
    const afterRevocation = record('after');
    tt.equal(await store.writeWhileLive([live], afterRevocation), false, 'a revoked family has no live guard');
    tt.equal(await store.get(afterRevocation.key), null);
  });

  t.test('writeWhileLive refuses keys outside one family with a plain Error', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const guard: StoreKey = { kind: 'rt', id: newId(), family };
    await store.set(guard, 1, longTtlMs);
    const refusals: [StoreKey[], StoreKey | undefined][] = [
      [[], undefined],
      [[{ kind: 'rt', id: newId() }], undefined],
      [[guard, { kind: 'rt', id: newId(), family: newFamily() }], undefined],
      [[guard], { kind: 'at', id: newId(), family: subFamily(newFamily(), 'at') }],
      [[guard], { kind: 'at', id: newId() }],
    ];
    for (const [guards, key] of refusals) {
      const err = await store.writeWhileLive(guards, key === undefined ? undefined : { key, value: 1, ttlMs: longTtlMs }).then(
        () => null,
        (e: unknown) => e,
      );
      tt.type(err, Error, JSON.stringify({ guards, key }));
      tt.notOk(err instanceof StoreUnavailableError || err instanceof FamilyRevokedError, 'not a store error');
    }
  });

  t.test('revokeFamily removes every member and a later write into the family throws FamilyRevokedError', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const other = newFamily();
    const members: StoreKey[] = [
      { kind: 'rt', id: newId(), family },
      { kind: 'rt', id: newId(), family },
      { kind: 'code', id: newId(), family },
    ];
    for (const key of members) await store.set(key, { family }, longTtlMs);
    await store.consume(members[0]!);
    const bystander: StoreKey = { kind: 'rt', id: newId(), family: other };
    await store.set(bystander, { family: other }, longTtlMs);

    tt.equal(await store.revokeFamily(family, longTtlMs), 3, 'consumed members count too');
    for (const key of members) {
      tt.equal(await store.get(key), null);
      tt.same(await store.consume(key), { status: 'missing' });
    }
    tt.equal(await store.isFamilyRevoked(family), true);
    tt.equal(await store.isFamilyRevoked(other), false);
    tt.same(await store.get(bystander), { family: other }, 'another family is untouched');

    const late: StoreKey = { kind: 'rt', id: newId(), family };
    const err = await store.set(late, { late: true }, longTtlMs).then(
      () => null,
      (e: unknown) => e,
    );
    tt.type(err, FamilyRevokedError);
    tt.equal((err as FamilyRevokedError).code, 'family_revoked');
    tt.equal((err as FamilyRevokedError).message, `family ${family} is revoked`);
    await tt.rejects(store.putIfAbsent(late, { late: true }, longTtlMs), FamilyRevokedError);
    tt.equal(await store.get(late), null);
    tt.equal(await store.revokeFamily(family, longTtlMs), 0, 'a second revocation finds nothing left');
  });

  t.test('familyRecords lists the live records of one kind in a family', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const a: StoreKey = { kind: 'jti', id: newId(), family };
    const b: StoreKey = { kind: 'jti', id: newId(), family };
    const consumed: StoreKey = { kind: 'jti', id: newId(), family };
    await store.set(a, { jti: 'a' }, longTtlMs);
    await store.set(b, { jti: 'b' }, longTtlMs);
    await store.set(consumed, { jti: 'c' }, longTtlMs);
    await store.consume(consumed);
    await store.set({ kind: 'rt', id: newId(), family }, { jti: 'not a jti record' }, longTtlMs);
    await store.set({ kind: 'jti', id: newId(), family: newFamily() }, { jti: 'other family' }, longTtlMs);
    const found = (await store.familyRecords<{ jti: string }>(family, 'jti')).map((r) => r.jti).sort();
    tt.same(found, ['a', 'b']);
    tt.same(await store.familyRecords(newFamily(), 'jti'), [], 'an unknown family has none');
  });

  /** Walks a family's listing `limit` at a time: every page's names, and how many pages. */
  async function walk(store: Store, family: string, limit: number): Promise<{ names: string[]; pages: number }> {
    const names: string[] = [];
    let after: string | undefined;
    let pages = 0;
    for (;;) {
      const page = await store.listFamily<{ n: string }>(family, after, limit);
      pages += 1;
      for (const r of page.records) {
        if (r.value.n !== r.name) throw new Error(`record ${r.value.n} listed as ${r.name}`);
        names.push(r.name);
      }
      if (page.records.length > limit) throw new Error('a page longer than its limit');
      if (page.next === null) return { names, pages };
      after = page.next;
    }
  }

  const listedKey = (family: string, name: string): StoreKey => ({ kind: 'client', id: hashHandle(name), family, name });

  t.test('listFamily pages the named records by name, in UTF-8 byte order, each once', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    // UTF-16 order puts the astral character before U+E000; UTF-8 byte order (Redis's) after.
    const names = ['a', 'ab', 'a b', 'b', 'B', 'é', '\ue000', '😀', 'z9', 'z10', 'zz', '0', '-', 'a\u0001'];
    for (const name of names) await store.set(listedKey(family, name), { n: name }, longTtlMs);
    await store.set({ kind: 'client', id: newId(), family }, { n: 'unnamed' }, longTtlMs);
    await store.set(listedKey(newFamily(), 'other'), { n: 'other' }, longTtlMs);
    const expected = [...names].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    for (const limit of [1, 3, names.length, 100]) {
      const { names: listed, pages } = await walk(store, family, limit);
      tt.same(listed, expected, `limit ${limit}: every name once, in order`);
      tt.equal(pages, Math.max(1, Math.ceil(names.length / limit)), `limit ${limit}: no empty last page`);
    }
    const fromMiddle = await store.listFamily<{ n: string }>(family, 'a', 2);
    tt.same(
      fromMiddle.records.map((r) => r.name),
      ['a\u0001', 'a b'],
      'after a name, from the next one',
    );
    tt.same(await store.listFamily(newFamily(), undefined, 10), { records: [], next: null }, 'an unknown family lists nothing');
    await tt.rejects(store.listFamily(family, undefined, 0), RangeError);
    await tt.rejects(store.set({ kind: 'client', id: newId(), family, name: 'nul\u0000' }, 1, longTtlMs), /U\+0000/);
  });

  t.test('listFamily follows the writes: a delete unlists, a rewrite lists once, expired and consumed records are skipped', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    for (const name of ['a', 'b', 'c', 'd', 'e']) await store.set(listedKey(family, name), { n: name }, longTtlMs);
    tt.equal(await store.delete(listedKey(family, 'b')), true);
    await store.set(listedKey(family, 'c'), { n: 'c' }, longTtlMs);
    await store.set({ kind: 'client', id: hashHandle('d'), family }, { n: 'd' }, longTtlMs);
    await store.set(listedKey(family, 'f'), { n: 'f' }, shortTtlMs);
    tt.same(await store.putIfAbsent(listedKey(family, 'g'), { n: 'g' }, longTtlMs), { n: 'g' });
    await store.consume(listedKey(family, 'e'));
    tt.same((await walk(store, family, 2)).names, ['a', 'c', 'd', 'f', 'g'], 'a write without the name keeps it listed');
    await sleep(pastShortTtlMs);
    tt.same((await walk(store, family, 2)).names, ['a', 'c', 'd', 'g'], 'an expired record is not listed');
    await store.revokeFamily(family, longTtlMs);
    tt.same(await store.listFamily(family, undefined, 10), { records: [], next: null }, 'a revoked family lists nothing');
  });

  t.test('scanFamily walks a family in batches and listRecords lists what was written without a name', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const names = Array.from({ length: 30 }, (_, i) => `client-${String(i).padStart(2, '0')}`);
    for (const name of names) await store.set({ kind: 'client', id: hashHandle(name), family }, { n: name }, longTtlMs);
    await store.set({ kind: 'jti', id: newId(), family }, { n: 'another kind' }, longTtlMs);
    tt.same(await store.listFamily(family, undefined, 100), { records: [], next: null }, 'written without a name: not listed');
    const seen = new Set<string>();
    let cursor: string | undefined;
    let batches = 0;
    do {
      const scan = await store.scanFamily<{ n: string }>(family, 'client', cursor, 7);
      for (const r of scan.records) seen.add(r.n);
      cursor = scan.cursor ?? undefined;
      batches += 1;
    } while (cursor !== undefined && batches < 1000);
    tt.same([...seen].sort(), names, 'every record of the kind, at least once');
    await store.delete({ kind: 'client', id: hashHandle('client-03'), family });
    tt.equal(await store.listRecords(names.map((n) => listedKey(family, n))), 29, 'a deleted record is not listed');
    tt.same(
      (await walk(store, family, 8)).names,
      names.filter((n) => n !== 'client-03'),
    );
    tt.equal(await store.listRecords([]), 0);
    await tt.rejects(store.listRecords([listedKey(family, 'a'), listedKey(newFamily(), 'b')]), /one family/);
  });

  t.test('revokeFamily of an unknown family removes nothing and still refuses later writes', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    tt.equal(await store.isFamilyRevoked(family), false);
    tt.equal(await store.revokeFamily(family, longTtlMs), 0);
    tt.equal(await store.isFamilyRevoked(family), true);
    await tt.rejects(store.set({ kind: 'rt', id: newId(), family }, 1, longTtlMs), FamilyRevokedError);
  });

  t.test('a family revocation ends when its TTL ends', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    await store.revokeFamily(family, shortTtlMs);
    tt.equal(await store.isFamilyRevoked(family), true);
    await sleep(pastShortTtlMs);
    tt.equal(await store.isFamilyRevoked(family), false);
    const key: StoreKey = { kind: 'rt', id: newId(), family };
    await store.set(key, { again: true }, longTtlMs);
    tt.same(await store.get(key), { again: true });
  });

  t.test('standalone records are untouched by any family revocation', async (tt) => {
    const store = await open(tt);
    const key: StoreKey = { kind: 'jti', id: newId() };
    await store.set(key, true, longTtlMs);
    await store.revokeFamily(newFamily(), longTtlMs);
    tt.equal(await store.get(key), true);
  });

  t.test('of 50 concurrent putIfAbsent callers one writes and every caller gets the stored value', async (tt) => {
    const store = await open(tt);
    const key: StoreKey = { kind: 'key', id: 'dev-signing-key:ES256' };
    const results = await Promise.all(
      Array.from({ length: concurrency }, (_, i) => store.putIfAbsent(key, { kid: `k${i}`, d: 'secret' }, longTtlMs)),
    );
    const stored = await store.get<{ kid: string }>(key);
    tt.ok(stored !== null && /^k\d+$/.test(stored.kid), 'one of the offered values is stored');
    tt.same(new Set(results.map((r) => r.kid)), new Set([stored?.kid]));
    for (const result of results) tt.same(result, stored);
  });

  t.test('putIfAbsent keeps a live record and replaces an expired or consumed one', async (tt) => {
    const store = await open(tt);
    const key: StoreKey = { kind: 'key', id: newId() };
    await store.set(key, { v: 'first' }, shortTtlMs);
    tt.same(await store.putIfAbsent(key, { v: 'second' }, longTtlMs), { v: 'first' });
    await sleep(pastShortTtlMs);
    tt.same(await store.putIfAbsent(key, { v: 'third' }, longTtlMs), { v: 'third' });
    await store.consume(key);
    tt.same(await store.putIfAbsent(key, { v: 'fourth' }, longTtlMs), { v: 'fourth' });
    tt.same(await store.get(key), { v: 'fourth' });
  });

  t.test('replaceIfUnchanged writes only over the value read, else answers the current one, and deletes likewise', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const key = listedKey(family, 'cas');
    await store.set(key, nested, longTtlMs);
    const read = (await store.get<typeof nested>(key)) as typeof nested;
    // What get handed back compares equal to what is stored (Dates, floats, null, unicode).
    tt.same(await store.replaceIfUnchanged(key, read, { ...read, scope: ['one'] }, longTtlMs), { status: 'replaced' });
    tt.same(await store.get(key), { ...nested, scope: ['one'] });
    const stale = await store.replaceIfUnchanged(key, read, { ...read, scope: ['two'] }, longTtlMs);
    tt.same(
      stale,
      { status: 'changed', current: { ...nested, scope: ['one'] } },
      'over a changed value: nothing written, the current value',
    );
    tt.same(await store.get(key), { ...nested, scope: ['one'] });
    tt.same(
      (await store.listFamily(family, undefined, 10)).records.map((r) => r.name),
      ['cas'],
      'a replaced record stays listed, once',
    );
    tt.same(await store.replaceIfUnchanged(key, read, null, longTtlMs), stale, 'a delete over a changed value: nothing done');
    tt.same(await store.replaceIfUnchanged(key, { ...nested, scope: ['one'] }, null, longTtlMs), { status: 'replaced' }, 'deleted');
    tt.equal(await store.get(key), null);
    tt.same(await store.listFamily(family, undefined, 10), { records: [], next: null }, 'a deleted record is unlisted');
    tt.same(
      await store.replaceIfUnchanged(key, { ...nested, scope: ['one'] }, nested, longTtlMs),
      { status: 'missing' },
      'a deleted record is not brought back',
    );
    tt.equal(await store.get(key), null);
    const standalone: StoreKey = { kind: 'misc', id: newId() };
    tt.same(await store.replaceIfUnchanged(standalone, { v: 1 }, { v: 2 }, longTtlMs), { status: 'missing' }, 'never written');
    await store.set(standalone, { v: 1 }, longTtlMs);
    await store.consume(standalone);
    tt.same(await store.replaceIfUnchanged(standalone, { v: 1 }, { v: 2 }, longTtlMs), { status: 'missing' }, 'consumed');
    const short: StoreKey = { kind: 'misc', id: newId() };
    await store.set(short, { v: 1 }, longTtlMs);
    tt.same(await store.replaceIfUnchanged(short, { v: 1 }, { v: 2 }, shortTtlMs), { status: 'replaced' });
    await sleep(pastShortTtlMs);
    tt.equal(await store.get(short), null, 'the replacement lives for its own TTL');
    const revoked = { kind: 'client' as const, id: newId(), family: newFamily() };
    await store.set(revoked, { v: 1 }, longTtlMs);
    await store.revokeFamily(revoked.family, longTtlMs);
    tt.same(
      await store.replaceIfUnchanged(revoked, { v: 1 }, { v: 2 }, longTtlMs),
      { status: 'missing' },
      'a revoked family holds nothing',
    );
    await tt.rejects(store.replaceIfUnchanged(standalone, { v: 1 }, { v: 2 }, 0), RangeError);
  });

  t.test('of 50 concurrent read-change-replace loops adding one entry each, every entry is kept', async (tt) => {
    const store = await open(tt);
    const key: StoreKey = { kind: 'client', id: newId(), family: newFamily(), name: 'counted' };
    await store.set(key, { entries: [] as number[] }, longTtlMs);
    let conflicts = 0;
    const add = async (n: number): Promise<void> => {
      let current = (await store.get<{ entries: number[] }>(key)) as { entries: number[] };
      for (;;) {
        const outcome = await store.replaceIfUnchanged(key, current, { entries: [...current.entries, n] }, longTtlMs);
        if (outcome.status === 'replaced') return;
        if (outcome.status === 'missing') throw new Error('the record went');
        conflicts += 1;
        current = outcome.current;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, (_, n) => add(n)));
    const stored = (await store.get<{ entries: number[] }>(key)) as { entries: number[] };
    tt.same(
      [...stored.entries].sort((x, y) => x - y),
      Array.from({ length: concurrency }, (_, n) => n),
      `each of the 50 entries once (${conflicts} conflicts answered with the current value)`,
    );
  });

  t.test('increment counts within a fixed window and starts over after it', async (tt) => {
    const store = await open(tt);
    const name = `pw:${newId()}`;
    // A window of 1 s, not shortTtlMs: the second increment must land inside it, and on a loaded
    // machine two commands 50 ms apart once took longer than 150 ms.
    const windowMs = 1000;
    const first = await store.increment(name, windowMs);
    tt.equal(first.count, 1);
    tt.ok(first.resetInMs > 0 && first.resetInMs <= windowMs, `resetInMs ${first.resetInMs} is within the window`);
    await sleep(50);
    const second = await store.increment(name, longTtlMs);
    tt.equal(second.count, 2);
    tt.ok(second.resetInMs <= first.resetInMs, 'a later increment does not extend the window');
    await sleep(windowMs + 150);
    const third = await store.increment(name, shortTtlMs);
    tt.same(third.count, 1, 'a new window starts');
  });

  t.test('increment by a negative step takes a count back, within the same window', async (tt) => {
    const store = await open(tt);
    const name = `uc:${newId()}`;
    await store.increment(name, longTtlMs);
    const two = await store.increment(name, longTtlMs);
    tt.equal(two.count, 2);
    const back = await store.increment(name, longTtlMs, -1);
    tt.equal(back.count, 1, 'one taken back');
    tt.ok(back.resetInMs <= two.resetInMs, 'the window is not extended');
    tt.equal((await store.increment(name, longTtlMs)).count, 2);
  });

  t.test('50 concurrent increments count to exactly 50', async (tt) => {
    const store = await open(tt);
    const name = `client:${newId()}`;
    const results = await Promise.all(Array.from({ length: concurrency }, () => store.increment(name, longTtlMs)));
    tt.same(
      results.map((r) => r.count).sort((a, b) => a - b),
      Array.from({ length: concurrency }, (_, i) => i + 1),
    );
  });

  t.test('resetCounter starts the count again', async (tt) => {
    const store = await open(tt);
    const name = `pw:${newId()}`;
    await store.increment(name, longTtlMs);
    await store.increment(name, longTtlMs);
    await store.resetCounter(name);
    tt.equal((await store.increment(name, longTtlMs)).count, 1);
    await store.resetCounter(`never-used:${newId()}`);
  });

  // Refresh-token chains (docs/storage.md, "Refresh-token chains").
  const chainOf = (limit = 60, windowMs = longTtlMs) => ({ limit, windowMs, ttlMs: longTtlMs });
  const chainKey = (family: string): StoreKey => ({ kind: 'rt', id: newId(), family });

  t.test('a chain rotation retires the old token for good: gone from get, a replay after, the successor live', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const [a, b, c] = [chainKey(family), chainKey(family), chainKey(family)];
    await store.set(a, { gen: 0 }, longTtlMs);
    tt.same(await store.rotateChain(a, b, { gen: 1 }, longTtlMs, [], { ...chainOf(), retry: { n: 'nonce' } }), {
      status: 'consumed',
      value: { gen: 0 },
    });
    tt.equal(await store.get(a), null);
    tt.same(await store.get(b), { gen: 1 });
    tt.same(
      await store.rotateChain(a, c, { gen: 2 }, longTtlMs, [], chainOf()),
      { status: 'replayed', value: { gen: 0 } },
      'a second rotation of it is a replay',
    );
    tt.equal(await store.get(c), null, 'which wrote nothing');
    tt.same(
      await store.chainLookup(a, 5000, chainOf()),
      { status: 'retry', successorId: b.id, successor: { gen: 1 }, retry: { n: 'nonce' } },
      'within the grace window: its successor and the retry value',
    );
    tt.same(await store.chainLookup(a, 0, chainOf()), { status: 'replayed', value: { gen: 0 } }, 'without one: a replay');
    tt.same(await store.chainLookup(b, 5000, chainOf()), { status: 'missing' }, 'a live token is not retired');
  });

  t.test('every retired token of a chain replays, however far back; a token never issued in it is missing', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const keys = Array.from({ length: 6 }, () => chainKey(family));
    await store.set(keys[0] as StoreKey, { gen: 0 }, longTtlMs);
    for (let i = 1; i < keys.length; i += 1) {
      const rotated = await store.rotateChain(keys[i - 1] as StoreKey, keys[i] as StoreKey, { gen: i }, longTtlMs, [], chainOf());
      tt.equal(rotated.status, 'consumed');
    }
    for (let i = 0; i < keys.length - 1; i += 1) {
      const found = await store.chainLookup(keys[i] as StoreKey, 5000, chainOf());
      tt.equal(found.status, i === keys.length - 2 ? 'retry' : 'replayed', `generation ${i}`);
    }
    tt.same(await store.chainLookup(chainKey(family), 5000, chainOf()), { status: 'missing' }, 'a stranger of the family');
    tt.same(await store.chainLookup(chainKey(newFamily()), 5000, chainOf()), { status: 'missing' }, 'a family without a chain');
  });

  t.test('the grace window ends graceMs after the rotation was applied, on the store clock', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const [a, b, c] = [chainKey(family), chainKey(family), chainKey(family)];
    await store.set(a, { gen: 0 }, longTtlMs);
    await store.rotateChain(a, b, { gen: 1 }, longTtlMs, [], chainOf());
    tt.equal((await store.chainLookup(a, shortTtlMs, chainOf())).status, 'retry');
    await sleep(pastShortTtlMs);
    tt.same(await store.chainLookup(a, shortTtlMs, chainOf()), { status: 'replayed', value: { gen: 0 } }, 'after it: a replay');
    tt.equal((await store.chainLookup(a, longTtlMs, chainOf())).status, 'retry', 'a longer window still covers it');
    await store.rotateChain(b, c, { gen: 2 }, longTtlMs, [], chainOf());
    tt.same(
      await store.chainLookup(a, longTtlMs, chainOf()),
      { status: 'replayed', value: { gen: 1 } },
      'once the successor is used, a replay',
    );
  });

  t.test('a chain past its rate refuses rotations and retries, writing nothing, until its window ends', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const keys = Array.from({ length: 5 }, () => chainKey(family));
    await store.set(keys[0] as StoreKey, { gen: 0 }, longTtlMs);
    for (let i = 1; i <= 2; i += 1) {
      tt.equal(
        (await store.rotateChain(keys[i - 1] as StoreKey, keys[i] as StoreKey, { gen: i }, longTtlMs, [], chainOf(3, 1000))).status,
        'consumed',
      );
    }
    tt.equal((await store.chainLookup(keys[1] as StoreKey, 5000, chainOf(3, 1000))).status, 'retry', 'a retry counts: the third');
    const limited = await store.rotateChain(keys[2] as StoreKey, keys[3] as StoreKey, { gen: 3 }, longTtlMs, [], chainOf(3, 1000));
    tt.equal(limited.status, 'limited');
    tt.ok(limited.status === 'limited' && limited.retryAfterMs > 0 && limited.retryAfterMs <= 1000, 'with the rest of the window');
    tt.same(await store.get(keys[2] as StoreKey), { gen: 2 }, 'the token is still live');
    tt.equal(await store.get(keys[3] as StoreKey), null, 'and no successor written');
    tt.equal((await store.chainLookup(keys[1] as StoreKey, 5000, chainOf(3, 1000))).status, 'limited', 'retries too');
    await sleep(1100);
    tt.equal(
      (await store.rotateChain(keys[2] as StoreKey, keys[3] as StoreKey, { gen: 3 }, longTtlMs, [], chainOf(3, 1000))).status,
      'consumed',
      'a new window',
    );
  });

  t.test('of 50 concurrent chain rotations one wins and every other sees a replay', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const old = chainKey(family);
    await store.set(old, { gen: 0 }, longTtlMs);
    const results = await Promise.all(
      Array.from({ length: concurrency }, (_, i) => store.rotateChain(old, chainKey(family), { by: i }, longTtlMs, [], chainOf())),
    );
    tt.same(countStatuses(results as ConsumeResult<unknown>[]), { consumed: 1, replayed: concurrency - 1, missing: 0 });
  });

  t.test('revoking a family drops its chain: lookups and rotations find nothing', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const [a, b, c] = [chainKey(family), chainKey(family), chainKey(family)];
    await store.set(a, { gen: 0 }, longTtlMs);
    await store.rotateChain(a, b, { gen: 1 }, longTtlMs, [], chainOf());
    tt.ok((await store.revokeFamily(family, longTtlMs)) >= 1);
    tt.same(await store.chainLookup(a, 5000, chainOf()), { status: 'missing' });
    tt.same(await store.rotateChain(b, c, { gen: 2 }, longTtlMs, [], chainOf()), { status: 'missing' });
  });

  // A refresh in one step (docs/storage.md, "One round trip per redemption").
  const now = Date.now();
  const rtRecord = (extra: Record<string, unknown> = {}) => ({
    v: 1,
    clientId: 'web',
    subject: 'alice',
    scopes: ['openid', 'offline_access'],
    claims: { auth_time: 1 },
    family: 'f',
    createdAt: now - 1000,
    absoluteExpiresAt: now + 3_600_000,
    expiresAt: now + 600_000,
    openId: { sid: 's' },
    ...extra,
  });
  const checksOf = (extra: Record<string, unknown> = {}) => ({
    clientId: 'web',
    now,
    scopes: ['openid', 'api1', 'offline_access'],
    slidingUntil: now + 1_200_000,
    ...extra,
  });
  const redeemOf = (graceMs = 5000, limit = 60) => ({ limit, windowMs: longTtlMs, graceMs, retry: { n: 'nonce' } });

  t.test('redeemChain checks a live token and rotates it to the same record with its expiry moved, in one step', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const [a, b, c] = [chainKey(family), chainKey(family), chainKey(family)];
    const at: StoreKey = { kind: 'at', id: newId(), family: subFamily(family, 'at') };
    await store.set(a, rtRecord(), longTtlMs);
    tt.same(await store.redeemChain(a, b, [{ key: at, value: { jti: 'j' }, ttlMs: longTtlMs }], checksOf(), redeemOf()), {
      status: 'consumed',
      value: rtRecord(),
    });
    tt.equal(await store.get(a), null, 'the old token is gone');
    tt.same(await store.get(b), rtRecord({ expiresAt: now + 1_200_000 }), 'the successor: the sliding expiry');
    tt.same(await store.get(at), { jti: 'j' }, 'the companion, in the same step');
    tt.same(
      await store.redeemChain(a, c, [], checksOf(), redeemOf()),
      { status: 'retry', successorId: b.id, successor: rtRecord({ expiresAt: now + 1_200_000 }), retry: { n: 'nonce' } },
      'the retired token again within the grace window: its successor',
    );
    tt.same(await store.redeemChain(a, c, [], checksOf(), redeemOf(0)), { status: 'replayed', value: rtRecord() }, 'without one: a replay');
    tt.equal(await store.get(c), null, 'which wrote nothing');
    tt.same(await store.redeemChain(b, c, [], checksOf({ slidingUntil: undefined }), redeemOf()), {
      status: 'consumed',
      value: rtRecord({ expiresAt: now + 1_200_000 }),
    });
    tt.same(await store.get(c), rtRecord({ expiresAt: now + 3_600_000 }), 'no sliding expiry: the absolute one');
    tt.same(
      await store.chainLookup(a, 0, chainOf()),
      { status: 'replayed', value: rtRecord({ expiresAt: now + 1_200_000 }) },
      'chainLookup sees the same chain (a replay reports the last retired record)',
    );
    tt.same(await store.redeemChain(chainKey(family), c, [], checksOf(), redeemOf()), { status: 'missing' }, 'a stranger');
  });

  t.test('redeemChain answers unchecked, writing nothing, when a check does not pass', async (tt) => {
    const store = await open(tt);
    const cases: [string, Record<string, unknown>, Record<string, unknown>][] = [
      ['another client', {}, { clientId: 'other' }],
      ['expired', { expiresAt: now - 1 }, {}],
      ['expiring at now', { expiresAt: now }, {}],
      ['past its absolute expiry', { absoluteExpiresAt: now }, {}],
      ['bound to a key, none presented', { jkt: 'k1' }, {}],
      ['bound to another key', { jkt: 'k1' }, { jkt: 'k2' }],
      ['bound to a certificate, another presented', { x5t: 'c1' }, { x5t: 'c2' }],
      ['a scope the client may no longer be granted', { scopes: ['openid', 'profile'] }, {}],
      ['no scopes', { scopes: [] }, {}],
      ['no expiry field', { expiresAt: undefined }, {}],
    ];
    for (const [name, recordExtra, checksExtra] of cases) {
      const family = newFamily();
      const [a, b] = [chainKey(family), chainKey(family)];
      const at: StoreKey = { kind: 'at', id: newId(), family: subFamily(family, 'at') };
      const record = rtRecord(recordExtra);
      await store.set(a, record, longTtlMs);
      const found = await store.redeemChain(a, b, [{ key: at, value: 1, ttlMs: longTtlMs }], checksOf(checksExtra), redeemOf());
      tt.same(found, { status: 'unchecked', value: record }, name);
      tt.same(await store.get(a), record, `${name}: the token stays live`);
      tt.equal(await store.get(b), null, `${name}: no successor`);
      tt.equal(await store.get(at), null, `${name}: no companion`);
    }
    const family = newFamily();
    const [a, b] = [chainKey(family), chainKey(family)];
    await store.set(a, rtRecord({ jkt: 'k1', x5t: 'c1' }), longTtlMs);
    tt.equal(
      (await store.redeemChain(a, b, [], checksOf({ jkt: 'k1', x5t: 'c1' }), redeemOf())).status,
      'consumed',
      'both bindings presented',
    );
  });

  t.test('redeemChain keeps the rate limit and a revoked family, and of 50 concurrent refreshes one rotates', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const keys = Array.from({ length: 4 }, () => chainKey(family));
    await store.set(keys[0] as StoreKey, rtRecord(), longTtlMs);
    tt.equal((await store.redeemChain(keys[0] as StoreKey, keys[1] as StoreKey, [], checksOf(), redeemOf(5000, 2))).status, 'consumed');
    tt.equal((await store.redeemChain(keys[1] as StoreKey, keys[2] as StoreKey, [], checksOf(), redeemOf(5000, 2))).status, 'consumed');
    const limited = await store.redeemChain(keys[2] as StoreKey, keys[3] as StoreKey, [], checksOf(), redeemOf(5000, 2));
    tt.equal(limited.status, 'limited');
    tt.equal(
      (await store.redeemChain(keys[1] as StoreKey, keys[3] as StoreKey, [], checksOf(), redeemOf(5000, 2))).status,
      'limited',
      'a retry too',
    );
    tt.ok((await store.get(keys[2] as StoreKey)) !== null, 'the token stays live');
    await store.revokeFamily(family, longTtlMs);
    tt.same(await store.redeemChain(keys[2] as StoreKey, keys[3] as StoreKey, [], checksOf(), redeemOf()), { status: 'missing' });

    const raced = newFamily();
    const old = chainKey(raced);
    await store.set(old, rtRecord(), longTtlMs);
    const results = await Promise.all(
      Array.from({ length: concurrency }, () => store.redeemChain(old, chainKey(raced), [], checksOf(), redeemOf(0))),
    );
    const statuses = results.map((r) => r.status);
    tt.equal(statuses.filter((s) => s === 'consumed').length, 1);
    tt.equal(statuses.filter((s) => s === 'replayed').length, concurrency - 1);
  });

  // A code or device code redeemed in one step (docs/storage.md, "One round trip per redemption").
  const codeRecord = (extra: Record<string, unknown> = {}) => ({
    v: 1,
    clientId: 'web',
    redirectUri: 'https://app/cb',
    subject: 'alice',
    scopes: ['openid', 'offline_access'],
    claims: { auth_time: 1, amr: ['pwd'] },
    nonce: 'n',
    sid: 's',
    codeChallenge: 'ch',
    family: 'f',
    createdAt: now - 1000,
    expiresAt: now + 60_000,
    ...extra,
  });
  const codeChecks = (extra: Record<string, unknown> = {}) => ({
    equal: { clientId: 'web', redirectUri: 'https://app/cb', codeChallenge: 'ch' },
    bound: { dpopJkt: undefined },
    later: { expiresAt: now },
    scopes: ['openid', 'api1', 'offline_access'],
    ...extra,
  });
  const derivedOf = (key: StoreKey, whenScope = 'offline_access') => ({
    key,
    ttlMs: longTtlMs,
    whenScope,
    set: { v: 1, clientId: 'web', createdAt: now, expiresAt: now + 600_000, big: 2 ** 40, half: 0.5, none: null },
    copy: ['subject', 'scopes', 'resources', 'claims', 'family'],
    nest: { openId: ['sid'], empty: ['nothing'] },
  });
  const derivedRecord = {
    v: 1,
    clientId: 'web',
    createdAt: now,
    expiresAt: now + 600_000,
    big: 2 ** 40,
    half: 0.5,
    none: null,
    subject: 'alice',
    scopes: ['openid', 'offline_access'],
    claims: { auth_time: 1, amr: ['pwd'] },
    family: 'f',
    openId: { sid: 's' },
    empty: {},
  };

  t.test('redeemRecord checks a live record, consumes it and writes the record derived from its fields, in one step', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const code: StoreKey = { kind: 'code', id: newId(), family };
    const rt = chainKey(family);
    const at: StoreKey = { kind: 'at', id: newId(), family: subFamily(family, 'at') };
    await store.set(code, codeRecord(), longTtlMs);
    tt.same(await store.redeemRecord(code, codeChecks(), derivedOf(rt), [{ key: at, value: { jti: 'j' }, ttlMs: longTtlMs }]), {
      status: 'consumed',
      value: codeRecord(),
      derived: true,
    });
    tt.equal(await store.get(code), null, 'the code is consumed');
    tt.same(await store.get(rt), derivedRecord, 'the derived record: set, then the fields copied as stored, then the nested maps');
    tt.same(await store.get(at), { jti: 'j' }, 'the companion, in the same step');
    tt.same(await store.consume(code), { status: 'replayed', value: codeRecord() }, 'consumed as consume does');
    tt.same(await store.redeemRecord(code, codeChecks(), derivedOf(chainKey(family)), []), { status: 'replayed', value: codeRecord() });
    tt.same(await store.redeemRecord({ kind: 'code', id: newId(), family }, codeChecks(), undefined, []), { status: 'missing' });

    const withResources = newFamily();
    const code2: StoreKey = { kind: 'code', id: newId(), family: withResources };
    const rt2 = chainKey(withResources);
    await store.set(code2, codeRecord({ resources: ['https://api'], sid: undefined, claims: {} }), longTtlMs);
    tt.equal((await store.redeemRecord(code2, codeChecks(), derivedOf(rt2), [])).status, 'consumed');
    tt.same(
      await store.get(rt2),
      { ...derivedRecord, claims: {}, resources: ['https://api'], openId: {} },
      'a field the record has is copied; one it lacks is left out',
    );

    const noOffline = newFamily();
    const code3: StoreKey = { kind: 'code', id: newId(), family: noOffline };
    const rt3 = chainKey(noOffline);
    const at3: StoreKey = { kind: 'at', id: newId(), family: subFamily(noOffline, 'at') };
    await store.set(code3, codeRecord({ scopes: ['openid'] }), longTtlMs);
    tt.same(await store.redeemRecord(code3, codeChecks(), derivedOf(rt3), [{ key: at3, value: 1, ttlMs: longTtlMs }]), {
      status: 'consumed',
      value: codeRecord({ scopes: ['openid'] }),
      derived: false,
    });
    tt.equal(await store.get(rt3), null, 'without its scope, nothing derived');
    tt.equal(await store.get(at3), 1, 'the companion still');
  });

  t.test('redeemRecord answers unchecked, writing nothing, when a check does not pass', async (tt) => {
    const store = await open(tt);
    const cases: [string, Record<string, unknown>, Record<string, unknown>][] = [
      ['another client', { clientId: 'other' }, {}],
      ['another redirect', {}, { equal: { clientId: 'web', redirectUri: 'https://app/other', codeChallenge: 'ch' } }],
      ['another challenge', { codeChallenge: 'x' }, {}],
      ['a challenge, none expected', {}, { equal: { clientId: 'web', redirectUri: 'https://app/cb', codeChallenge: null } }],
      ['no challenge, one expected', { codeChallenge: undefined }, {}],
      ['bound to a key, none presented', { dpopJkt: 'k1' }, {}],
      ['bound to another key', { dpopJkt: 'k1' }, { bound: { dpopJkt: 'k2' } }],
      ['expired', { expiresAt: now }, {}],
      ['a scope the client may no longer be granted', { scopes: ['openid', 'profile'] }, {}],
      ['no scopes', { scopes: [] }, {}],
      ['a status other than the one asked', { status: 'pending' }, { equal: { clientId: 'web', status: 'approved' } }],
    ];
    for (const [name, recordExtra, checksExtra] of cases) {
      const family = newFamily();
      const code: StoreKey = { kind: 'code', id: newId(), family };
      const rt = chainKey(family);
      const at: StoreKey = { kind: 'at', id: newId(), family: subFamily(family, 'at') };
      const record = codeRecord(recordExtra);
      await store.set(code, record, longTtlMs);
      const found = await store.redeemRecord(code, codeChecks(checksExtra), derivedOf(rt), [{ key: at, value: 1, ttlMs: longTtlMs }]);
      tt.same(found, { status: 'unchecked', value: record }, name);
      tt.same(await store.get(code), record, `${name}: the code stays live`);
      tt.equal(await store.get(rt), null, `${name}: nothing derived`);
      tt.equal(await store.get(at), null, `${name}: no companion`);
    }
    const family = newFamily();
    const code: StoreKey = { kind: 'code', id: newId(), family };
    await store.set(code, codeRecord({ dpopJkt: 'k1', status: 'approved' }), longTtlMs);
    tt.equal(
      (
        await store.redeemRecord(
          code,
          codeChecks({ equal: { clientId: 'web', status: 'approved' }, bound: { dpopJkt: 'k1' } }),
          derivedOf(chainKey(family)),
          [],
        )
      ).status,
      'consumed',
      'the bound key presented, the status asked',
    );
  });

  t.test('redeemRecord refuses in a revoked family, and of 50 concurrent redemptions one wins', async (tt) => {
    const store = await open(tt);
    const family = newFamily();
    const code: StoreKey = { kind: 'code', id: newId(), family };
    await store.set(code, codeRecord(), longTtlMs);
    await store.revokeFamily(family, longTtlMs);
    const rt = chainKey(family);
    tt.same(await store.redeemRecord(code, codeChecks(), derivedOf(rt), []), { status: 'missing' });
    tt.equal(await store.get(rt), null);

    const raced = newFamily();
    const racedCode: StoreKey = { kind: 'code', id: newId(), family: raced };
    await store.set(racedCode, codeRecord(), longTtlMs);
    const results = await Promise.all(
      Array.from({ length: concurrency }, () => store.redeemRecord(racedCode, codeChecks(), derivedOf(chainKey(raced)), [])),
    );
    const statuses = results.map((r) => r.status);
    tt.equal(statuses.filter((s) => s === 'consumed').length, 1);
    tt.equal(statuses.filter((s) => s === 'replayed').length, concurrency - 1);
  });

  t.test('ping and checkReady resolve while open and every call after close rejects with StoreUnavailableError', async (tt) => {
    const store = await makeStore(tt);
    await store.ping();
    await store.checkReady();
    await store.close();
    const err = await store.get({ kind: 'code', id: newId() }).then(
      () => null,
      (e: unknown) => e,
    );
    tt.type(err, StoreUnavailableError);
    tt.equal((err as StoreUnavailableError).code, 'store_unavailable');
    await tt.rejects(store.ping(), StoreUnavailableError);
    await tt.rejects(store.checkReady(), StoreUnavailableError);
    await tt.rejects(store.consume({ kind: 'code', id: newId() }), StoreUnavailableError);
    await store.close();
  });
}
