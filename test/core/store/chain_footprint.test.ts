// What one refresh-token family costs Redis under a rotation flood (docs/storage.md, "Refresh-token
// chains"): a real redis-server, the store's own scripts, records of the refresh grant's shape.
// The chain's state is constant whatever the number of rotations (the retired tokens are deleted,
// their ids kept in a fixed 1 KiB filter), and the rate limit bounds what a flood of one minute
// adds: one access-token entry per allowed rotation. The figures printed here are docs/storage.md's.
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { Redis } from 'ioredis';
import { RedisStore } from '../../../core/store/redis_store.js';
import type { CompanionRecord, StoreKey } from '../../../core/store/store.js';
import { issuedTokensFamily } from '../../../core/records/refresh_token_handle.js';
import type { RefreshTokenRecord } from '../../../workers/tokens/refresh_token_record.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { newFamily, newId } from './store_conformance.js';

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);

const admin = new Redis(redis.url, { lazyConnect: true });
await admin.connect();
t.teardown(() => admin.disconnect());

const monthMs = 30 * 86_400_000;
const hourMs = 3_600_000;

/** A refresh token's record as a password sign-in with `offline_access` writes it. */
function refreshRecord(family: string): RefreshTokenRecord {
  const now = Date.now();
  return {
    v: 1,
    clientId: 'app',
    subject: 'sub-alice',
    scopes: ['api1', 'offline_access'],
    claims: { auth_time: Math.floor(now / 1000), idp: 'local', amr: ['pwd'], name: 'Alice' },
    family,
    createdAt: now,
    absoluteExpiresAt: now + monthMs,
    expiresAt: now + monthMs,
  };
}

/** The access-token entry a rotation writes in its step (core/records/family_revocation.ts). */
function issuedEntry(family: string): CompanionRecord<unknown> {
  const jti = randomBytes(16).toString('base64url');
  return {
    key: { kind: 'at', id: jti, family: issuedTokensFamily(family) },
    value: { jti, exp: Math.floor((Date.now() + hourMs) / 1000) },
    ttlMs: hourMs,
  };
}

/** Keys under `prefix` and the sum of their `MEMORY USAGE`. */
async function footprint(prefix: string): Promise<{ keys: number; bytes: number }> {
  const keys = await admin.keys(`${prefix}*`);
  let bytes = 0;
  for (const key of keys) bytes += Number(await admin.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
  return { keys: keys.length, bytes };
}

async function usedMemory(): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1]);
}

function openStore(t: Test, prefix: string): RedisStore {
  const store = new RedisStore({ url: redis.url, keyPrefix: prefix, commandTimeoutMs: 2000 });
  t.teardown(() => store.close());
  return store;
}

t.test('a family rotated 2,000 times keeps the keys and bytes it had after 10', async (t) => {
  const prefix = `fp1-${newId().slice(0, 6)}:`;
  const store = openStore(t, prefix);
  const family = newFamily();
  const chain = { limit: 1_000_000, windowMs: 60_000, ttlMs: monthMs, retry: { v: 2, n: randomBytes(16) } };
  let current: StoreKey = { kind: 'rt', id: newId(), family };
  await store.set(current, refreshRecord(family), monthMs);
  const rotate = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i += 1) {
      const next: StoreKey = { kind: 'rt', id: newId(), family };
      const outcome = await store.rotateChain(current, next, refreshRecord(family), monthMs, [], chain);
      if (outcome.status !== 'consumed') throw new Error(`rotation ${i}: ${outcome.status}`);
      current = next;
    }
  };
  await rotate(10);
  const after10 = await footprint(prefix);
  await rotate(1990);
  const after2000 = await footprint(prefix);
  t.comment(`after 10 rotations: ${after10.keys} keys, ${after10.bytes} B; after 2,000: ${after2000.keys} keys, ${after2000.bytes} B`);
  t.equal(after2000.keys, after10.keys, 'the same keys: the live token, the members set, the chain record, the filter');
  t.equal(after10.keys, 4);
  t.ok(Math.abs(after2000.bytes - after10.bytes) <= 64, `the same bytes, within 64 (${after10.bytes} → ${after2000.bytes})`);
  t.ok(after2000.bytes < 6144, `under 6 KiB for the whole family (${after2000.bytes} B)`);
});

t.test('a 60 s flood of one family at the default rate grows Redis by a bounded number of bytes', async (t) => {
  const prefix = `fp2-${newId().slice(0, 6)}:`;
  const store = openStore(t, prefix);
  const family = newFamily();
  const limit = 60;
  // The default `refreshTokenRotationsPerMinute`: the flood takes seconds, all of it within the
  // minute's window, so what it adds is what a minute of flood adds.
  const chain = { limit, windowMs: 60_000, ttlMs: monthMs, retry: { v: 2, n: randomBytes(16) } };
  let current: StoreKey = { kind: 'rt', id: newId(), family };
  await store.set(current, refreshRecord(family), monthMs);
  const before = await footprint(prefix);
  const memoryBefore = await usedMemory();
  let rotated = 0;
  let limited = 0;
  let raced = 0;
  // 32 in flight at a time, as the flood: whatever is refused leaves the token as it was.
  const attempts = 94 * 32;
  for (let sent = 0; sent < attempts; sent += 32) {
    const outcomes = await Promise.all(
      Array.from({ length: 32 }, async () => {
        const next: StoreKey = { kind: 'rt', id: newId(), family };
        const outcome = await store.rotateChain(current, next, refreshRecord(family), monthMs, [issuedEntry(family)], chain);
        if (outcome.status === 'consumed') current = next;
        return outcome.status;
      }),
    );
    rotated += outcomes.filter((s) => s === 'consumed').length;
    limited += outcomes.filter((s) => s === 'limited').length;
    raced += outcomes.filter((s) => s === 'replayed').length;
  }
  const after = await footprint(prefix);
  const grown = after.bytes - before.bytes;
  t.comment(
    `${attempts} attempts: ${rotated} rotated, ${limited} limited; ${before.keys} → ${after.keys} keys, +${grown} B (MEMORY USAGE), used_memory +${(await usedMemory()) - memoryBefore} B`,
  );
  t.equal(rotated, limit, 'exactly the limit rotated within the window');
  t.equal(limited + raced, attempts - limit, 'every other attempt was refused by the limit or lost a race to a rotation (a replay)');
  t.ok(limited > attempts / 4, `most by the limit (${limited})`);
  t.equal(after.keys, before.keys + 3 + limit, 'the chain record, the filter and the access-token members set, and one entry per rotation');
  // docs/storage.md states this bound: 6 KiB of chain state and about 320 B an access-token entry.
  t.ok(grown <= 6144 + limit * 320, `bounded: +${grown} B ≤ 6144 + ${limit} × 320`);
});
