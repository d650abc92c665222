/**
 * Store memory per live refresh-token family and per pending device code: `count` of each written
 * through the real store (store_records.ts) into a redis-server of their own, measured by
 * `INFO memory` `used_memory` before and after; and the memory store's heap per family, in this
 * process.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { sendRedisCommand, startRedisServer } from '../../test/helpers/redis_server.js';
import { MemoryStore } from '../../core/store/memory_store.js';
import { RedisStore } from '../../core/store/redis_store.js';
import type { Store } from '../../core/store/store.js';
import { writeDeviceCode, writeRefreshFamily, type RecordClient } from './store_records.js';

export interface StoreMemoryFigure {
  /** What was written: `family` (refresh-token family) or `device_code`. */
  item: 'family' | 'device_code';
  count: number;
  /** Growth of Redis `used_memory` (or of the heap, for the memory store) over the writes. */
  bytes: number;
  seconds: number;
}

/** Store calls in flight at once: the store's auto-pipelining sends each event-loop turn's as one write. */
const inFlight = 512;

/** Calls `write` `count` times, `inFlight` at a time, reporting progress about every 2%. */
export async function writeMany(count: number, write: () => Promise<void>, progress: (done: number) => void): Promise<void> {
  let started = 0;
  let done = 0;
  const step = Math.max(1, Math.floor(count / 50));
  const lane = async (): Promise<void> => {
    while (started < count) {
      started++;
      await write();
      if (++done % step === 0) progress(done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, lane));
}

async function usedMemory(port: number): Promise<number> {
  const info = (await sendRedisCommand(port, 'INFO memory', 5000)) ?? '';
  const used = /used_memory:(\d+)/.exec(info)?.[1];
  if (used === undefined) throw new Error(`redis-server on ${port} did not report used_memory`);
  return Number(used);
}

async function measureWrites(
  item: StoreMemoryFigure['item'],
  count: number,
  write: () => Promise<void>,
  used: () => Promise<number>,
  progress: (line: string, milestone: boolean) => void,
): Promise<StoreMemoryFigure> {
  const before = await used();
  const started = performance.now();
  await writeMany(count, write, (done) => {
    const seconds = (performance.now() - started) / 1000;
    const what = item === 'family' ? 'refresh families' : 'device codes';
    const line = `${what}: ${done.toLocaleString('en-US')}/${count.toLocaleString('en-US')} · ${Math.round(done / seconds).toLocaleString('en-US')}/s`;
    progress(line, done % Math.max(1, Math.floor(count / 10)) === 0);
  });
  const seconds = (performance.now() - started) / 1000;
  return { item, count, bytes: (await used()) - before, seconds };
}

/** Redis: `count` families, then `count` device codes, into a redis-server started for this alone. */
export async function measureRedisStore(
  familyClient: RecordClient,
  deviceClient: RecordClient,
  count: number,
  progress: (line: string, milestone: boolean) => void,
): Promise<{ redisVersion: string; figures: StoreMemoryFigure[] }> {
  const redis = await startRedisServer();
  if (!redis.managed) throw new Error('redis-server is not installed (Debian: apt-get install -y redis-server)');
  // A long bound on each call: thousands of pipelined writes wait their turn on one connection.
  const store = new RedisStore({ url: redis.url, commandTimeoutMs: 10_000 });
  try {
    await store.checkReady();
    const info = (await sendRedisCommand(redis.port, 'INFO server', 1000)) ?? '';
    const used = (): Promise<number> => usedMemory(redis.port);
    const now = Date.now();
    const families = await measureWrites(
      'family',
      count,
      () => writeRefreshFamily(store, familyClient, 'bench-user-1', now),
      used,
      progress,
    );
    const devices = await measureWrites('device_code', count, () => writeDeviceCode(store, deviceClient, now), used, progress);
    return { redisVersion: /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown', figures: [families, devices] };
  } finally {
    await store.close();
    await redis.stop();
  }
}

/** V8's full collection, without starting node with `--expose-gc` (a flag set at run time reaches new contexts). */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** The heap after a full collection, in bytes. */
async function settledHeap(): Promise<number> {
  const gc = collector();
  // Twice: the first pass may leave what finalizers freed.
  gc();
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  return process.memoryUsage().heapUsed;
}

/** The memory store (the gateway's main thread keeps it): heap growth over `count` families. */
export async function measureMemoryStore(
  client: RecordClient,
  count: number,
  progress: (line: string, milestone: boolean) => void,
): Promise<StoreMemoryFigure> {
  const store: Store = new MemoryStore();
  try {
    const now = Date.now();
    return await measureWrites('family', count, () => writeRefreshFamily(store, client, 'bench-user-1', now), settledHeap, progress);
  } finally {
    await store.close();
  }
}
