import t from 'tap';
import { Redis } from 'ioredis';
import { hashHandle, newHandle } from '../../../core/store/handle.js';
import { RedisStore } from '../../../core/store/redis_store.js';
import { StoreUnavailableError, subFamily } from '../../../core/store/store.js';
import type { StoreKey } from '../../../core/store/store.js';
import { freePort } from '../../helpers/free_port.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { newFamily, newId, runStoreConformance, sleep } from './store_conformance.js';
import type { TapTest } from './store_conformance.js';

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning !== null) t.comment(redis.warning);

/** Skips the subtests that stop or start servers when the fallback Redis is in use. */
function unmanagedReason(reason: string): string | false {
  return redis.managed ? false : reason;
}

let prefixCount = 0;
/** Each store gets its own prefix, so subtests cannot see each other's keys. */
function newPrefix(): string {
  prefixCount += 1;
  return `test${process.pid}-${prefixCount}:`;
}

/** A raw client for looking at what the store wrote. */
function openRawClient(t: TapTest, url: string): Redis {
  const raw = new Redis(url, { maxRetriesPerRequest: 1 });
  t.teardown(() => raw.disconnect());
  return raw;
}

async function scanKeys(raw: Redis, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await raw.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys.sort();
}

/** Polls `ping` until it succeeds; resolves whether it did within `timeoutMs`. */
async function waitForPing(store: RedisStore, timeoutMs: number): Promise<boolean> {
  const until = performance.now() + timeoutMs;
  while (performance.now() < until) {
    if (
      await store.ping().then(
        () => true,
        () => false,
      )
    )
      return true;
    await sleep(50);
  }
  return false;
}

/** Elapsed milliseconds of a call that must reject, and what it rejected with. */
async function timeRejection(call: () => Promise<unknown>): Promise<{ err: unknown; ms: number }> {
  const started = performance.now();
  const err = await call().then(
    () => null,
    (e: unknown) => e,
  );
  return { err, ms: performance.now() - started };
}

t.test('conformance', async (t) => {
  // 2 s: the suite tests behaviour, and a loaded CI machine has taken over 500 ms for a first command.
  runStoreConformance(t, () => new RedisStore({ url: redis.url, keyPrefix: newPrefix(), commandTimeoutMs: 2000 }));
});

t.test('keys follow the documented layout, never contain a raw handle, and all carry a TTL', async (t) => {
  const prefix = newPrefix();
  const store = new RedisStore({ url: redis.url, keyPrefix: prefix, commandTimeoutMs: 500 });
  t.teardown(() => store.close());
  const raw = openRawClient(t, redis.url);

  const code = newHandle();
  const refreshToken = newHandle();
  const successor = newHandle();
  const family = newFamily();
  const otherFamily = newFamily();
  await store.set({ kind: 'code', id: hashHandle(code) }, { clientId: 'web' }, 60_000);
  await store.set({ kind: 'rt', id: hashHandle(refreshToken), family }, { gen: 0 }, 120_000);
  const accessTokenId = newId();
  await store.rotate(
    { kind: 'rt', id: hashHandle(refreshToken), family },
    { kind: 'rt', id: hashHandle(successor), family },
    { gen: 1 },
    180_000,
    {
      key: { kind: 'at', id: accessTokenId, family: subFamily(family, 'at') },
      value: { jti: 'j', exp: 1 },
      ttlMs: 90_000,
    },
  );
  await store.set({ kind: 'rt', id: newId(), family: otherFamily }, { gen: 0 }, 60_000);
  await store.revokeFamily(otherFamily, 30_000);
  await store.putIfAbsent({ kind: 'key', id: 'dev-signing-key:ES256' }, { kid: 'a' }, 60_000);
  await store.increment('pw:alice', 60_000);
  await store.consume({ kind: 'code', id: hashHandle(code) });

  const keys = await scanKeys(raw, prefix);
  t.same(
    keys,
    [
      `${prefix}code:${hashHandle(code)}`,
      `${prefix}ctr:pw:alice`,
      `${prefix}key:dev-signing-key:ES256`,
      `${prefix}{${family}}:members`,
      `${prefix}{${family}}:rt:${hashHandle(refreshToken)}`,
      `${prefix}{${family}}:rt:${hashHandle(successor)}`,
      `${prefix}{${family}}~at:members`,
      `${prefix}{${family}}~at:at:${accessTokenId}`,
      `${prefix}{${otherFamily}}:revoked`,
    ].sort(),
  );
  // Redis Cluster hashes what is inside the first braces: a sub-family shares its family's slot,
  // which is what lets the rotate script write the companion record.
  const hashTags = new Set(keys.filter((key) => key.includes(family)).map((key) => /\{([^}]*)\}/.exec(key)?.[1]));
  t.same([...hashTags], [family], 'the family and its sub-family share one hash tag');
  t.same(await raw.smembers(`${prefix}{${family}}~at:members`), [`${prefix}{${family}}~at:at:${accessTokenId}`]);
  for (const handle of [code, refreshToken, successor]) {
    t.notOk(
      keys.some((key) => key.includes(handle)),
      'no key contains a raw handle',
    );
  }
  for (const key of keys) {
    const ttl = await raw.pttl(key);
    t.ok(ttl > 0, `${key} has a TTL (${ttl} ms)`);
  }
  t.same(
    (await raw.smembers(`${prefix}{${family}}:members`)).sort(),
    [`${prefix}{${family}}:rt:${hashHandle(refreshToken)}`, `${prefix}{${family}}:rt:${hashHandle(successor)}`].sort(),
  );
  const membersTtl = await raw.pttl(`${prefix}{${family}}:members`);
  t.ok(membersTtl > 120_000 && membersTtl <= 180_000, 'the members set lives as long as its longest member');
  const consumedBytes = await raw.getBuffer(`${prefix}code:${hashHandle(code)}`);
  t.equal(consumedBytes?.[0], 1, 'a consumed record keeps its bytes behind a consumed marker');
});

t.test(
  'a store created before its server is up fails fast, then works once the server answers',
  { skip: unmanagedReason('the fallback Redis cannot be started') },
  async (t) => {
    const port = await freePort();
    const store = new RedisStore({
      url: `redis://127.0.0.1:${port}`,
      keyPrefix: newPrefix(),
      // Longer than "fails fast" allows: the refusal must not wait for a command timeout.
      commandTimeoutMs: 1000,
      maxReconnectDelayMs: 100,
    });
    t.teardown(() => store.close());
    const { err, ms } = await timeRejection(() => store.get({ kind: 'code', id: newId() }));
    t.type(err, StoreUnavailableError, 'nothing listens yet');
    t.ok(ms < 1000, `rejected in ${Math.round(ms)} ms`);

    const server = await startRedisServer({ port });
    t.teardown(() => server.stop());
    t.ok(await waitForPing(store, 3000), 'connects in the background');
    const key: StoreKey = { kind: 'code', id: newId() };
    await store.set(key, { v: 1 }, 60_000);
    t.same(await store.get(key), { v: 1 });
  },
);

t.test('familyRecords forgets the names of expired records in the members set, and only theirs', async (t) => {
  const prefix = newPrefix();
  const store = new RedisStore({ url: redis.url, keyPrefix: prefix, commandTimeoutMs: 500 });
  t.teardown(() => store.close());
  const raw = openRawClient(t, redis.url);
  const family = newFamily();
  const membersKey = `${prefix}{${family}}:members`;
  for (let i = 0; i < 5; i += 1) await store.set({ kind: 'grant', id: newId(), family }, { i }, 50);
  await store.set({ kind: 'grant', id: newId(), family }, { i: 'live' }, 60_000);
  await store.set({ kind: 'consent', id: newId(), family }, { i: 'other kind' }, 60_000);
  t.equal(await raw.scard(membersKey), 7);
  await sleep(100);
  t.same(await store.familyRecords(family, 'grant'), [{ i: 'live' }]);
  t.equal(await raw.scard(membersKey), 2, 'the five expired names are gone; the live ones stay');
  t.same(await store.familyRecords(family, 'consent'), [{ i: 'other kind' }]);
});

t.test('calls made right after construction wait for the first connection', async (t) => {
  const store = new RedisStore({ url: redis.url, keyPrefix: newPrefix(), commandTimeoutMs: 500 });
  t.teardown(() => store.close());
  const key: StoreKey = { kind: 'code', id: newId() };
  const results = await Promise.all([store.set(key, 1, 60_000), store.ping(), store.increment('c', 1000)]);
  t.same(results, [undefined, undefined, { count: 1, resetInMs: 1000 }]);
});

t.test(
  'a store pointed at a stopped server rejects get and consume with StoreUnavailableError within 2 s and works again after a restart',
  { skip: unmanagedReason('the fallback Redis cannot be stopped') },
  async (t) => {
    // A server of its own: stopping the shared one would break the other subtests.
    const server = await startRedisServer();
    t.teardown(() => server.stop());
    const store = new RedisStore({ url: server.url, keyPrefix: newPrefix(), commandTimeoutMs: 500, maxReconnectDelayMs: 200 });
    t.teardown(() => store.close());
    const key: StoreKey = { kind: 'code', id: newId() };
    await store.set(key, { v: 1 }, 60_000);
    t.same(await store.get(key), { v: 1 });

    await server.stop();
    for (const [name, call] of [
      ['get', () => store.get(key)],
      ['consume', () => store.consume(key)],
      ['rotate', () => store.rotate(key, { kind: 'code', id: newId() }, 1, 1000)],
      ['increment', () => store.increment('pw:alice', 1000)],
      ['ping', () => store.ping()],
    ] as const) {
      const { err, ms } = await timeRejection(call);
      t.type(err, StoreUnavailableError, `${name} rejects with StoreUnavailableError`);
      t.ok(ms < 2000, `${name} rejected in ${Math.round(ms)} ms`);
    }
    // Many calls at once during the outage: every one fails, none hangs.
    const burst = await Promise.allSettled(Array.from({ length: 50 }, () => store.consume(key)));
    t.same(
      new Set(burst.map((r) => (r.status === 'rejected' && r.reason instanceof StoreUnavailableError ? 'unavailable' : 'other'))),
      new Set(['unavailable']),
    );

    await server.start();
    const recovered = await waitForPing(store, 5000);
    t.ok(recovered, 'reconnects in the background');
    // The server restarted empty (no persistence): the store simply works again.
    t.equal(await store.get(key), null);
    await store.set(key, { v: 2 }, 60_000);
    t.same(await store.consume(key), { status: 'consumed', value: { v: 2 } });
  },
);

t.test(
  'a server that stops answering makes calls reject with StoreUnavailableError within the command timeout',
  { skip: unmanagedReason('the fallback Redis cannot be paused') },
  async (t) => {
    const server = await startRedisServer();
    t.teardown(() => server.stop());
    const store = new RedisStore({ url: server.url, keyPrefix: newPrefix(), commandTimeoutMs: 300 });
    t.teardown(() => store.close());
    const key: StoreKey = { kind: 'code', id: newId() };
    await store.set(key, { v: 1 }, 60_000);
    server.pause();
    t.teardown(() => server.resume());
    const results = await Promise.all(
      [() => store.consume(key), () => store.get(key), () => store.increment('c', 1000)].map((call) => timeRejection(call)),
    );
    for (const { err, ms } of results) {
      t.type(err, StoreUnavailableError);
      t.ok(ms >= 250 && ms < 700, `rejected after ${Math.round(ms)} ms`);
    }
  },
);

t.test(
  'a call that started before the server went away is not replayed after it comes back',
  { skip: unmanagedReason('the fallback Redis cannot be stopped') },
  async (t) => {
    const server = await startRedisServer();
    t.teardown(() => server.stop());
    const store = new RedisStore({ url: server.url, keyPrefix: newPrefix(), commandTimeoutMs: 1000, maxReconnectDelayMs: 100 });
    t.teardown(() => store.close());
    await store.ping();
    await server.stop();
    const key: StoreKey = { kind: 'misc', id: newId() };
    await t.rejects(store.set(key, { late: true }, 60_000), StoreUnavailableError);
    await server.start();
    await sleep(400);
    t.equal(await store.get(key), null, 'the failed write never lands');
  },
);

t.test('a Redis error reply that is not an outage surfaces as is', async (t) => {
  const prefix = newPrefix();
  const store = new RedisStore({ url: redis.url, keyPrefix: prefix, commandTimeoutMs: 500 });
  t.teardown(() => store.close());
  const raw = openRawClient(t, redis.url);
  const id = newId();
  await raw.sadd(`${prefix}code:${id}`, 'not a record');
  await raw.pexpire(`${prefix}code:${id}`, 60_000);
  const { err } = await timeRejection(() => store.get({ kind: 'code', id }));
  t.type(err, Error);
  t.notOk(err instanceof StoreUnavailableError, 'WRONGTYPE is a bug, not an outage');
  t.match((err as Error).message, /WRONGTYPE/);
});

t.test('on Redis Cluster rotate between two standalone keys is refused before any I/O', async (t) => {
  const port = await freePort();
  const store = new RedisStore({ nodes: [`redis://127.0.0.1:${port}`], keyPrefix: newPrefix(), commandTimeoutMs: 300 });
  t.teardown(() => store.close());
  const { err } = await timeRejection(() => store.rotate({ kind: 'dc', id: newId() }, { kind: 'dc', id: newId() }, 1, 1000));
  t.type(err, Error);
  t.notOk(err instanceof StoreUnavailableError);
  t.match((err as Error).message, /one family/);
});

t.test('a cluster store with no reachable node rejects with StoreUnavailableError within 2 s', async (t) => {
  const port = await freePort();
  const store = new RedisStore({ nodes: [`redis://127.0.0.1:${port}`], keyPrefix: newPrefix(), commandTimeoutMs: 300 });
  t.teardown(() => store.close());
  const { err, ms } = await timeRejection(() => store.consume({ kind: 'code', id: newId(), family: newFamily() }));
  t.type(err, StoreUnavailableError);
  t.ok(ms < 2000, `rejected in ${Math.round(ms)} ms`);
});

t.test(
  'a chain rotation that reaches Redis after its caller gave up does nothing (docs/storage.md, "Late rotations")',
  { skip: unmanagedReason('the fallback Redis cannot be paused') },
  async (t) => {
    const server = await startRedisServer();
    t.teardown(() => server.stop());
    const store = new RedisStore({ url: server.url, keyPrefix: newPrefix(), commandTimeoutMs: 300 });
    t.teardown(() => store.close());
    const admin = new Redis(server.url);
    t.teardown(() => admin.disconnect());
    const family = newFamily();
    const old: StoreKey = { kind: 'rt', id: newId(), family };
    const next: StoreKey = { kind: 'rt', id: newId(), family };
    await store.set(old, { gen: 0 }, 60_000);
    // The store reads Redis's clock once it is connected: let that happen.
    await sleep(300);
    const chain = { limit: 60, windowMs: 60_000, ttlMs: 60_000 };
    // Redis holds every command for 1.5 s, then runs them: the rotation with them.
    await admin.call('CLIENT', 'PAUSE', '1500', 'ALL');
    await t.rejects(store.rotateChain(old, next, { gen: 1 }, 60_000, [], chain), StoreUnavailableError, 'the caller gives up');
    await sleep(1600);
    t.same(await store.get(old), { gen: 0 }, 'once Redis ran it, the old token is still live');
    t.equal(await store.get(next), null, 'and no successor was written');
    t.same(await store.chainLookup(old, 5000, chain), { status: 'missing' }, 'nor any chain state');
    t.equal((await store.rotateChain(old, next, { gen: 1 }, 60_000, [], chain)).status, 'consumed', 'the next attempt rotates');
  },
);

t.test(
  'a rotation Redis applied in time is answered even when the caller was busy past its timeout (docs/storage.md, "Late rotations")',
  { skip: unmanagedReason('the fallback Redis cannot be paused') },
  async (t) => {
    const server = await startRedisServer();
    t.teardown(() => server.stop());
    const store = new RedisStore({ url: server.url, keyPrefix: newPrefix(), commandTimeoutMs: 300 });
    t.teardown(() => store.close());
    const admin = new Redis(server.url);
    t.teardown(() => admin.disconnect());
    const family = newFamily();
    const old: StoreKey = { kind: 'rt', id: newId(), family };
    const next: StoreKey = { kind: 'rt', id: newId(), family };
    await store.set(old, { gen: 0 }, 60_000);
    // The store reads Redis's clock once it is connected: let that happen, so the rotation
    // carries a deadline.
    await sleep(300);
    const chain = { limit: 60, windowMs: 60_000, ttlMs: 60_000 };
    // Redis holds the rotation 150 ms, then runs it, well before its deadline (300 ms), and
    // answers; meanwhile the caller's event loop is busy (a burst of signing on a loaded machine)
    // until past the call's timeout, so that answer waits on the socket. In the turn after, timers
    // run before the poll that reads it.
    await admin.call('CLIENT', 'PAUSE', '150', 'ALL');
    const rotation = store.rotateChain(old, next, { gen: 1 }, 60_000, [], chain);
    // Two turns: the command is written (ioredis sends an auto-pipeline from setImmediate).
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    const busyUntil = performance.now() + 700;
    while (performance.now() < busyUntil) {
      // Busy, as a thread signing tokens is.
    }
    t.equal((await rotation).status, 'consumed', 'the caller gets the rotation Redis applied');
    t.same(await store.get(next), { gen: 1 }, 'which stands');
  },
);
