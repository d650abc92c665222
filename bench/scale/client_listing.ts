/**
 * Issue 34's listing measurement (docs/decisions/0026-stored-clients-at-scale.md, "Listing"): the
 * admin API's page of clients with many clients in Redis. Writes N clients into a fresh
 * redis-server as the version before the listing wrote them (no listing entry), pipelined through
 * `RedisStore` with the registry's key and record (as the `scale-store` bench does), then times the
 * once-per-store migration that lists them (`backfillClientListing`), then times pages of 10, 100
 * and 1,000 (`ClientRegistry.list`, which the admin API answers with) at the start, at random ids
 * and at the end, and reads redis-server's own time per page (`INFO commandstats`). Up to 20,000
 * clients it also times what any page cost before the listing: the whole family read and sorted.
 *
 * npx tsx bench/scale/client_listing.ts [--clients 1000000] [--pages 200]
 */
import { parseArgs } from 'node:util';
import pino from 'pino';
import { RedisStore } from '../../core/store/redis_store.js';
import type { StoreKey } from '../../core/store/store.js';
import type { ClientConfig } from '../../core/worker_config.js';
import { checkClientDocument } from '../../gateway/admin/client_document.js';
import { backfillClientListing } from '../../gateway/client_registry/client_listing_backfill.js';
import { ClientRegistry, storedClientKey, storedClientRecord, storedClientTtlMs } from '../../gateway/client_registry/client_registry.js';
import { validateConfig } from '../../gateway/config/load.js';
import { sendRedisCommand, startRedisServer } from '../../test/helpers/redis_server.js';
import { baseTestConfig, sha256Secret } from '../../test/helpers/test_gateway.js';
import { scaleClient } from './clients.js';
import { writeMany } from './store_memory.js';

const { values } = parseArgs({ options: { clients: { type: 'string' }, pages: { type: 'string' } }, strict: true });
const count = Number(values.clients ?? '1000000');
const pagesPerRun = Number(values.pages ?? '200');

const log = (line: string): void => void process.stdout.write(`${line}\n`);
const redis = await startRedisServer();
const store = new RedisStore({ url: redis.url, commandTimeoutMs: 30_000 });

async function info(section: string): Promise<string> {
  return (await sendRedisCommand(redis.port, `INFO ${section}`, 10_000)) ?? '';
}

async function evalshaStats(): Promise<{ calls: number; usec: number }> {
  const match = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(await info('commandstats'));
  return { calls: Number(match?.[1] ?? 0), usec: Number(match?.[2] ?? 0) };
}

async function usedMemory(): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await info('memory'))?.[1] ?? 0);
}

try {
  const checked = checkClientDocument(
    {
      clientId: 'template',
      clientSecrets: [{ value: sha256Secret('s') }],
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1'],
    },
    validateConfig(baseTestConfig(), { configDir: process.cwd(), env: {} }),
    [],
  );
  if (!checked.ok) throw new Error(JSON.stringify(checked.problems));
  const template: ClientConfig = checked.client;
  const unlisted = (clientId: string): StoreKey => {
    const { name: _name, ...key } = storedClientKey(clientId);
    return key;
  };

  const seedStarted = performance.now();
  let next = 0;
  const now = Date.now();
  await writeMany(
    count,
    async () => {
      const { clientId, secret } = scaleClient(next++);
      const config = { ...template, clientId, clientSecrets: [{ value: sha256Secret(secret) }] } as ClientConfig;
      await store.set(unlisted(clientId), storedClientRecord(config, now), storedClientTtlMs);
    },
    (done) => {
      if (done % Math.max(1, Math.floor(count / 10)) === 0) log(`written ${done}/${count}`);
    },
  );
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  const memoryBefore = await usedMemory();
  log(
    `seeded ${count} clients without a listing entry in ${seedSeconds.toFixed(1)} s; redis used_memory ${(memoryBefore / 2 ** 20).toFixed(0)} MiB`,
  );

  const migrationStarted = performance.now();
  const listed = await backfillClientListing({
    store,
    family: 'clients',
    keyOf: storedClientKey,
    logger: pino({ level: 'info' }),
    markerTtlMs: storedClientTtlMs,
  });
  const migrationSeconds = (performance.now() - migrationStarted) / 1000;
  const memoryAfter = await usedMemory();
  log(
    `migration: ${listed} listed in ${migrationSeconds.toFixed(1)} s; redis used_memory ${(memoryAfter / 2 ** 20).toFixed(0)} MiB (+${((memoryAfter - memoryBefore) / 2 ** 20).toFixed(0)} MiB, ${((memoryAfter - memoryBefore) / count).toFixed(0)} B a client)`,
  );

  const registry = new ClientRegistry(store, {
    cacheSize: 10,
    negativeCacheSize: 10,
    cacheTtlMs: 1000,
    pollIntervalMs: 60_000,
    logger: pino({ level: 'silent' }),
  });
  const ids = Array.from({ length: 1000 }, () => scaleClient(Math.floor(Math.random() * count)).clientId);
  const rows: string[] = [];
  for (const limit of [10, 100, 1000]) {
    for (const where of ['first page', 'random ids', 'last page'] as const) {
      const pages = limit === 1000 ? Math.ceil(pagesPerRun / 4) : pagesPerRun;
      const times: number[] = [];
      let short = 0;
      const before = await evalshaStats();
      for (let i = 0; i < pages; i += 1) {
        const after = where === 'first page' ? undefined : where === 'random ids' ? ids[i % ids.length] : 'scale-client-99999';
        const started = performance.now();
        const page = await registry.list(after, limit);
        times.push(performance.now() - started);
        if (page.clients.length < limit) short += 1;
      }
      const after = await evalshaStats();
      times.sort((a, b) => a - b);
      const at = (q: number): string => (times[Math.min(times.length - 1, Math.floor(q * times.length))] as number).toFixed(2);
      const redisUs = (after.usec - before.usec) / Math.max(1, after.calls - before.calls);
      const row = `| ${limit} | ${where} | ${pages}${short > 0 ? ` (${short} short)` : ''} | ${at(0.5)} | ${at(0.9)} | ${at(0.99)} | ${redisUs.toFixed(0)} |`;
      rows.push(row);
      log(row);
    }
  }
  if (count <= 20_000) {
    // What a page cost before the listing: the whole family read and sorted (SMEMBERS + MGET).
    const started = performance.now();
    const all = await store.familyRecords<{ config: { clientId: string } }>('clients', 'client');
    all.sort((a, b) => (a.config.clientId < b.config.clientId ? -1 : 1));
    log(
      `before the listing, any page: the whole family read and sorted, ${all.length} records in ${(performance.now() - started).toFixed(0)} ms`,
    );
  }
  log('\n| limit | where | pages | median ms | p90 ms | p99 ms | redis µs/page |\n|---:|---|---:|---:|---:|---:|---:|');
  for (const row of rows) log(row);
} finally {
  await store.close();
  await redis.stop();
}
