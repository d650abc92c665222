/**
 * `npm run bench -- scale`: what Tessera's costs do as the work grows (figures:
 * docs/decisions/0017-start-up-and-store-sizing.md):
 *
 * 1. start-up time and RSS of `tessera start` with 10, 10k and 100k configured clients, on the
 *    memory and the Redis store;
 * 2. client_credentials server CPU per request with 10 clients and with 100k (the load cycling over
 *    1,000 of them, then over all 100k), and with 20 extension grant validators loaded, all
 *    interleaved under the same load generator;
 * 3. store memory per live refresh-token family and per pending device code, 1M of each written
 *    through the Redis store into a redis-server of their own, and the memory store's heap per family.
 *
 * `--quick` shrinks the counts (10 and 10k clients, 50k records) for a smoke run.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { maxRememberedHeaders } from '../../gateway/client_authentication/verified_headers.js';
import { validateConfig } from '../../gateway/config/load.js';
import { freePort } from '../../test/helpers/free_port.js';
import type { CostRow, ScaleResults, StartUpRow, StoreRow } from '../report/scale_results.js';
import type { RunContext } from '../runner/context.js';
import type { StoreKind } from '../scenarios/scenario.js';
import { addClients, benchClients, buildBenchConfig } from '../support/bench_config.js';
import { repoRoot, startChild, type ChildServer } from '../support/child_server.js';
import { scaleClientConfigs, spreadAuthorizations } from './clients.js';
import { measureInterleaved, preflight, type CostLoad } from './interleaved_cost.js';
import { measureStartUp } from './start_up.js';
import { measureStoredClients, storedClientCounts } from './stored_clients.js';
import { measureMemoryStore, measureRedisStore } from './store_memory.js';
import type { RecordClient } from './store_records.js';
import { writeValidatorModules } from './validator_modules.js';

const gatewayEntry = fileURLToPath(new URL('../gateway_process.ts', import.meta.url));

/** The sizes of one run: the full run, or `--quick`. */
export interface ScaleSizes {
  clientCounts: number[];
  /** Clients of the large gateway in the cost table, and how many of them the first load cycles over. */
  manyClients: number;
  cycledOfMany: number;
  validators: number;
  redisRecords: number;
  memoryRecords: number;
}

export function scaleSizes(quick: boolean): ScaleSizes {
  return quick
    ? { clientCounts: [10, 10_000], manyClients: 10_000, cycledOfMany: 1_000, validators: 20, redisRecords: 50_000, memoryRecords: 20_000 }
    : {
        clientCounts: [10, 10_000, 100_000],
        manyClients: 100_000,
        cycledOfMany: 1_000,
        validators: 20,
        redisRecords: 1_000_000,
        memoryRecords: 200_000,
      };
}

/** A config of `clients` generated clients (and optionally a validators folder), written to the run's folder. */
async function writeConfig(
  ctx: RunContext,
  name: string,
  options: { clients: number; store: StoreKind; validatorsDir?: string },
): Promise<{ file: string; url: string }> {
  const port = await freePort();
  const redis = options.store === 'redis' ? await ctx.ensureRedis() : null;
  const config = buildBenchConfig({
    port,
    store: options.store,
    ...(redis === null ? {} : { redisUrl: redis.url }),
    keyPrefix: `bench:scale:${name}:${port}:`,
    key: await ctx.key('ES256'),
    threads: ctx.options.threads,
  });
  config.clients = scaleClientConfigs(options.clients);
  // Its own free port: the default one (9464) may be taken by another gateway on this machine.
  config.management = { host: '127.0.0.1', port: 0 };
  // An absent folder loads no validators (gateway/validators/validator_loader.ts).
  config.validatorsDir = options.validatorsDir ?? path.join(ctx.tmp, 'no-validators');
  const file = path.join(ctx.tmp, `scale-${name}.json`);
  writeFileSync(file, JSON.stringify(config));
  return { file, url: `http://127.0.0.1:${port}` };
}

async function measureStartUps(ctx: RunContext, sizes: ScaleSizes): Promise<StartUpRow[]> {
  const stores = ctx.options.stores ?? ['memory', 'redis'];
  const root = ctx.options.gatewayRoot === undefined ? repoRoot : path.resolve(ctx.options.gatewayRoot);
  const rows: StartUpRow[] = [];
  for (const store of stores) {
    for (const clients of sizes.clientCounts) {
      ctx.progress.phase(`scale · start-up with ${clients.toLocaleString('en-US')} clients on the ${store} store`);
      const { file, url } = await writeConfig(ctx, `start-${store}-${clients}`, { clients, store });
      const figure = await measureStartUp({ root, target: ctx.target.kind, configFile: file, url });
      rows.push({ clients, store, ...figure });
    }
  }
  return rows;
}

async function startGateway(ctx: RunContext, name: string, configFile: string): Promise<ChildServer> {
  ctx.progress.phase(`scale · starting the gateway with ${name}`);
  return startChild({
    name,
    entry: gatewayEntry,
    args: [configFile, ctx.target.kind, ...(ctx.options.gatewayRoot === undefined ? [] : [path.resolve(ctx.options.gatewayRoot)])],
    readyTimeoutMs: 300_000,
  });
}

async function measureCosts(ctx: RunContext, sizes: ScaleSizes): Promise<{ rows: CostRow[]; reference: string }> {
  const few = 10;
  const servers: ChildServer[] = [];
  try {
    const fewConfig = await writeConfig(ctx, 'cost-few', { clients: few, store: 'memory' });
    const manyConfig = await writeConfig(ctx, 'cost-many', { clients: sizes.manyClients, store: 'memory' });
    const validatorsDir = writeValidatorModules(path.join(ctx.tmp, 'scale-validators'), sizes.validators);
    const validatorConfig = await writeConfig(ctx, 'cost-validators', { clients: few, store: 'memory', validatorsDir });
    const fewServer = await startGateway(ctx, `${few} clients`, fewConfig.file);
    servers.push(fewServer);
    const manyServer = await startGateway(ctx, `${sizes.manyClients.toLocaleString('en-US')} clients`, manyConfig.file);
    servers.push(manyServer);
    const validatorServer = await startGateway(ctx, `${sizes.validators} validators`, validatorConfig.file);
    servers.push(validatorServer);
    const many = sizes.manyClients.toLocaleString('en-US');
    const shapes: (CostLoad & Omit<CostRow, 'rounds' | 'id' | 'label'>)[] = [
      {
        id: 'few',
        label: `${few} clients`,
        server: fewServer,
        authorizations: spreadAuthorizations(few, few),
        clients: few,
        cycled: few,
        validators: 0,
      },
      {
        id: 'many-some',
        label: `${many} clients`,
        server: manyServer,
        authorizations: spreadAuthorizations(sizes.manyClients, sizes.cycledOfMany),
        clients: sizes.manyClients,
        cycled: sizes.cycledOfMany,
        validators: 0,
      },
      {
        id: 'many-all',
        label: `${many} clients, all cycled`,
        server: manyServer,
        authorizations: spreadAuthorizations(sizes.manyClients, sizes.manyClients),
        clients: sizes.manyClients,
        cycled: sizes.manyClients,
        validators: 0,
      },
      {
        id: 'validators',
        label: `${few} clients, ${sizes.validators} validators`,
        server: validatorServer,
        authorizations: spreadAuthorizations(few, few),
        clients: few,
        cycled: few,
        validators: sizes.validators,
      },
    ];
    for (const shape of shapes) await preflight(shape);
    const rounds = await measureInterleaved(shapes, {
      generator: ctx.generator,
      rounds: ctx.options.rounds ?? 2,
      durationS: ctx.options.durationS,
      warmupS: ctx.options.warmupS,
      connections: ctx.options.connections,
      workDir: ctx.tmp,
      progress: ctx.progress,
    });
    return {
      rows: shapes.map(({ id, label, clients, cycled, validators }) => ({
        id,
        label,
        clients,
        cycled,
        validators,
        rounds: rounds.get(id) ?? [],
      })),
      reference: 'few',
    };
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
}

/** The lifetimes real issuance uses: the schema's defaults for the bench's user clients. */
async function recordClients(ctx: RunContext): Promise<{ family: RecordClient; device: RecordClient }> {
  const config = buildBenchConfig({ port: 1, store: 'memory', keyPrefix: 'unused:', key: await ctx.key('ES256'), threads: 1 });
  addClients(config, 'ro', 'tv');
  const loaded = validateConfig(config, { configDir: ctx.tmp, env: {} });
  const pick = (clientId: string): RecordClient => {
    const client = loaded.clients.find((c) => c.clientId === clientId);
    if (client === undefined) throw new Error(`no client ${clientId}`);
    return {
      clientId,
      accessTokenLifetime: client.accessTokenLifetime,
      absoluteRefreshTokenLifetime: client.absoluteRefreshTokenLifetime,
      refreshTokenExpiration: client.refreshTokenExpiration,
      slidingRefreshTokenLifetime: client.slidingRefreshTokenLifetime,
      deviceCodeLifetime: client.deviceCodeLifetime,
    };
  };
  return { family: pick(benchClients.ro.clientId), device: pick(benchClients.tv.clientId) };
}

async function measureStores(ctx: RunContext, sizes: ScaleSizes): Promise<{ rows: StoreRow[]; redisVersion: string | null }> {
  const clients = await recordClients(ctx);
  const stores = ctx.options.stores ?? ['memory', 'redis'];
  const rows: StoreRow[] = [];
  let redisVersion: string | null = null;
  // Redrawn in place on a terminal; every tenth also printed elsewhere, so a log shows it moving.
  const progress = (line: string, milestone: boolean): void =>
    milestone && !process.stderr.isTTY ? ctx.progress.phase(`scale · ${line}`) : ctx.progress.update(line);
  if (stores.includes('redis')) {
    ctx.progress.phase(`scale · writing ${sizes.redisRecords.toLocaleString('en-US')} refresh families and device codes to Redis`);
    const redis = await measureRedisStore(clients.family, clients.device, sizes.redisRecords, progress);
    redisVersion = redis.redisVersion;
    rows.push(...redis.figures.map((figure) => ({ store: 'redis' as const, ...figure })));
  }
  if (stores.includes('memory')) {
    ctx.progress.phase(`scale · writing ${sizes.memoryRecords.toLocaleString('en-US')} refresh families to the memory store`);
    rows.push({ store: 'memory', ...(await measureMemoryStore(clients.family, sizes.memoryRecords, progress)) });
  }
  return { rows, redisVersion };
}

/**
 * Runs the parts asked for: `config` (start-up, cost and store memory above; `scale`) and `store`
 * (clients kept in the store, stored_clients.ts; `scale-store`). A part that fails is reported in
 * `failures` and the others still run.
 */
export async function runScaleBench(
  ctx: RunContext,
  parts: { config: boolean; store: boolean } = { config: true, store: false },
): Promise<ScaleResults> {
  const sizes = scaleSizes(ctx.options.quick);
  const results: ScaleResults = {
    startUp: [],
    cost: [],
    costReference: null,
    basicHeaderCacheEntries: maxRememberedHeaders,
    store: [],
    redisVersion: null,
    failures: [],
  };
  const part = async (name: string, run: () => Promise<void>): Promise<void> => {
    try {
      await run();
    } catch (err) {
      ctx.progress.clear();
      results.failures.push(`${name}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    }
  };
  if (parts.config) {
    await part('start-up', async () => {
      results.startUp = await measureStartUps(ctx, sizes);
    });
    await part('client_credentials cost', async () => {
      const { rows, reference } = await measureCosts(ctx, sizes);
      results.cost = rows;
      results.costReference = reference;
    });
    await part('store memory', async () => {
      const { rows, redisVersion } = await measureStores(ctx, sizes);
      results.store = rows;
      results.redisVersion = redisVersion;
    });
  }
  if (parts.store) {
    await part('stored clients', async () => {
      results.storedClients = await measureStoredClients(ctx, storedClientCounts(ctx.options.quick, ctx.options.storedClients));
      results.redisVersion ??= ctx.redisVersion;
    });
  }
  ctx.progress.clear();
  return results;
}
