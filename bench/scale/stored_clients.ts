/**
 * Issue 34's measurement: with clients kept in the store (`clientRegistry.store`,
 * docs/architecture.md "Clients in the store"), start-up time, RSS and client_credentials CPU per
 * request should not grow with the number of stored clients, since a gateway reads a stored
 * client only when a request names it.
 *
 * For each count, ascending, the clients added since the last count are written into the bench's
 * redis-server through `RedisStore`, with the registry's own key and record
 * (`storedClientKey`, `storedClientRecord`, from a client checked by the admin API's
 * `checkClientDocument`): the bytes the admin API writes. Then one gateway starts as an operator
 * starts it (start_up.ts), and three loads run against it, interleaved: over 1,000 stored ids
 * (cached after their first request), over one id, and, when there are enough, over more ids than
 * the registry caches (every request a store `GET`).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { sendRedisCommand } from '../../test/helpers/redis_server.js';
import { RedisStore } from '../../core/store/redis_store.js';
import type { ClientConfig } from '../../core/worker_config.js';
import { checkClientDocument } from '../../gateway/admin/client_document.js';
import { storedClientKey, storedClientRecord, storedClientTtlMs } from '../../gateway/client_registry/client_registry.js';
import { validateConfig } from '../../gateway/config/load.js';
import { freePort } from '../../test/helpers/free_port.js';
import type { StoredClientsResults, StoredClientsRow } from '../report/scale_results.js';
import type { RunContext } from '../runner/context.js';
import { buildBenchConfig, sha256Secret } from '../support/bench_config.js';
import { repoRoot } from '../support/child_server.js';
import { processMemory } from '../support/proc_stats.js';
import { scaleClient, spreadAuthorizations } from './clients.js';
import { measureInterleaved, preflight, type CostLoad } from './interleaved_cost.js';
import { startTimed, type TimedGateway } from './start_up.js';
import { writeMany } from './store_memory.js';

/** The registry's cache as the gateways run it: the schema's default (docs/configuration.md, `clientRegistry`). */
export const storedClientsCacheSize = 10_000;
/** Distinct ids of the first load: all cached after their first request. */
const spreadIds = 1_000;

export function storedClientCounts(quick: boolean, given: readonly number[] | undefined): number[] {
  const counts = given ?? (quick ? [10, 10_000] : [10, 100_000, 1_000_000]);
  return [...new Set(counts)].sort((a, b) => a - b);
}

/**
 * The client config of stored client `index`, from `template` (checked once as the admin API checks
 * a client): only its id and its secret's hash differ, as from one `POST /admin/clients` to the next.
 */
function storedClientConfig(template: ClientConfig, index: number): ClientConfig {
  const { clientId, secret } = scaleClient(index);
  const [first] = template.clientSecrets;
  return { ...template, clientId, clientSecrets: [{ ...first, value: sha256Secret(secret) } as ClientConfig['clientSecrets'][number]] };
}

/** The admin API's check of the clients' JSON, once: a client_credentials client for api1. */
function checkedTemplate(config: Record<string, unknown>, configDir: string): ClientConfig {
  const loaded = validateConfig(config, { configDir, env: {} });
  const { clientId, secret } = scaleClient(0);
  const checked = checkClientDocument(
    {
      clientId,
      clientSecrets: [{ value: sha256Secret(secret) }],
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1'],
      accessTokenLifetime: 3600,
    },
    loaded,
    [],
  );
  if (!checked.ok) throw new Error(`the stored clients' JSON: ${JSON.stringify(checked.problems)}`);
  return checked.client;
}

/** Writes stored clients `from` … `to - 1` (pipelined: many calls in flight on one connection). */
async function seed(
  store: RedisStore,
  template: ClientConfig,
  from: number,
  to: number,
  progress: (line: string, milestone: boolean) => void,
): Promise<number> {
  const started = performance.now();
  const now = Date.now();
  let next = from;
  const count = to - from;
  await writeMany(
    count,
    async () => {
      const config = storedClientConfig(template, next++);
      await store.set(storedClientKey(config.clientId), storedClientRecord(config, now), storedClientTtlMs);
    },
    (done) => {
      const seconds = (performance.now() - started) / 1000;
      const line = `stored clients: ${(from + done).toLocaleString('en-US')}/${to.toLocaleString('en-US')} · ${Math.round(done / seconds).toLocaleString('en-US')}/s`;
      progress(line, done % Math.max(1, Math.floor(count / 10)) === 0);
    },
  );
  return (performance.now() - started) / 1000;
}

/** redis-server's `GET` calls so far (`INFO commandstats`): a stored client's lookup is one. */
async function getCalls(port: number): Promise<number | null> {
  const info = (await sendRedisCommand(port, 'INFO commandstats', 5000)) ?? '';
  const calls = /cmdstat_get:calls=(\d+)/.exec(info)?.[1];
  return calls === undefined ? 0 : Number(calls);
}

async function usedMemory(port: number): Promise<number | null> {
  const info = (await sendRedisCommand(port, 'INFO memory', 5000)) ?? '';
  const used = /used_memory:(\d+)/.exec(info)?.[1];
  return used === undefined ? null : Number(used);
}

/** The loads of one count: over 1,000 ids (or all), one id, and past the cache when there are enough. */
function loadsFor(gateway: TimedGateway, count: number): (CostLoad & { cycled: number })[] {
  const n = count.toLocaleString('en-US');
  const spread = Math.min(count, spreadIds);
  const loads: (CostLoad & { cycled: number })[] = [
    {
      id: `stored-${count}-spread`,
      label: `${n} stored, ${spread.toLocaleString('en-US')} ids`,
      server: gateway,
      authorizations: spreadAuthorizations(count, spread),
      cycled: spread,
    },
    { id: `stored-${count}-one`, label: `${n} stored, 1 id`, server: gateway, authorizations: spreadAuthorizations(count, 1), cycled: 1 },
  ];
  const beyond = 2 * storedClientsCacheSize;
  if (count >= beyond)
    loads.push({
      id: `stored-${count}-beyond-cache`,
      label: `${n} stored, ${beyond.toLocaleString('en-US')} ids (past the cache)`,
      server: gateway,
      authorizations: spreadAuthorizations(count, beyond),
      cycled: beyond,
    });
  return loads;
}

/** The stored-clients part: one row per count, in ascending order. */
export async function measureStoredClients(ctx: RunContext, counts: readonly number[]): Promise<StoredClientsResults> {
  const redis = await ctx.ensureRedis();
  const port = await freePort();
  const keyPrefix = `bench:scale-store:${port}:`;
  const config = buildBenchConfig({
    port,
    store: 'redis',
    redisUrl: redis.url,
    keyPrefix,
    key: await ctx.key('ES256'),
    threads: ctx.options.threads,
  });
  config.clientRegistry = { store: true, cacheSize: storedClientsCacheSize };
  config.management = { host: '127.0.0.1', port: 0 };
  config.validatorsDir = path.join(ctx.tmp, 'no-validators');
  const configFile = path.join(ctx.tmp, 'scale-store.json');
  writeFileSync(configFile, JSON.stringify(config));
  const template = checkedTemplate(config, ctx.tmp);
  const root = ctx.options.gatewayRoot === undefined ? repoRoot : path.resolve(ctx.options.gatewayRoot);
  // Redrawn in place on a terminal; every tenth also printed elsewhere, so a log shows it moving.
  const progress = (line: string, milestone: boolean): void =>
    milestone && !process.stderr.isTTY ? ctx.progress.phase(`scale-store · ${line}`) : ctx.progress.update(line);

  const store = new RedisStore({ url: redis.url, keyPrefix, commandTimeoutMs: 10_000 });
  const rows: StoredClientsRow[] = [];
  try {
    await store.checkReady();
    let seeded = 0;
    for (const count of counts) {
      ctx.progress.phase(`scale-store · writing stored clients ${seeded.toLocaleString('en-US')} → ${count.toLocaleString('en-US')}`);
      const seedSeconds = await seed(store, template, seeded, count, progress);
      seeded = count;
      const redisUsedBytes = await usedMemory(redis.port);
      ctx.progress.phase(`scale-store · starting the gateway with ${count.toLocaleString('en-US')} stored clients`);
      const gateway = await startTimed({ root, target: ctx.target.kind, configFile, url: `http://127.0.0.1:${port}` });
      try {
        const loads = loadsFor(gateway, count);
        for (const load of loads) await preflight(load);
        const rounds = await measureInterleaved(loads, {
          generator: ctx.generator,
          rounds: ctx.options.rounds ?? 1,
          durationS: ctx.options.durationS,
          warmupS: ctx.options.warmupS,
          connections: ctx.options.connections,
          workDir: ctx.tmp,
          progress: ctx.progress,
          store: { pid: redis.pid, reads: () => getCalls(redis.port) },
        });
        rows.push({
          clients: count,
          seedSeconds,
          redisUsedBytes,
          readyMs: gateway.readyMs,
          rssBytes: gateway.rssBytes,
          rssAfterLoadBytes: processMemory(gateway.pid)?.rssBytes ?? null,
          loads: loads.map(({ id, label, cycled }) => ({ id, label, clients: count, cycled, validators: 0, rounds: rounds.get(id) ?? [] })),
        });
      } finally {
        await gateway.stop();
      }
    }
  } finally {
    await store.close();
  }
  return { rows, cacheSize: storedClientsCacheSize };
}
