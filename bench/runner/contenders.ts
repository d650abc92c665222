import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ContenderKind } from '../report/results.js';
import type { ActiveScenario, PeerDefinition, RequestPlan, StoreKind } from '../scenarios/scenario.js';
import { buildBenchConfig } from '../support/bench_config.js';
import { startChild, type ChildServer } from '../support/child_server.js';
import { freePort } from '../support/free_port.js';
import type { RunContext } from './context.js';

const gatewayEntry = fileURLToPath(new URL('../gateway_process.ts', import.meta.url));
const ceilingEntry = fileURLToPath(new URL('../ceiling_process.ts', import.meta.url));
const peerEntry = fileURLToPath(new URL('../peers/oidc_provider_process.ts', import.meta.url));

export interface StartedContender {
  server: ChildServer;
  /** redis-server, whose CPU is the store's share of a Tessera-on-Redis request. */
  storePid: number | null;
}

/** One server a scenario measures: Tessera on one store, a peer, or the ceiling endpoint. */
export interface Contender {
  id: string;
  label: string;
  kind: ContenderKind;
  store: StoreKind | null;
  plan: RequestPlan;
  start(): Promise<StartedContender>;
}

/** Where `--cpu-prof` writes a contender's profiles: one folder each, a file per thread inside. */
export function profileFolder(scenario: string, id: string): string {
  return `${scenario}-${id.replace(/\W+/g, '_')}`;
}

function profileArgs(ctx: RunContext, scenario: string, id: string): string[] {
  if (ctx.profileDir === null) return [];
  return ['--cpu-prof', `--cpu-prof-dir=${path.join(ctx.profileDir, profileFolder(scenario, id))}`];
}

function tesseraContender(scenario: ActiveScenario, store: StoreKind | null, ctx: RunContext): Contender {
  const id = store === null ? 'tessera' : `tessera/${store}`;
  return {
    id,
    label: store === null ? 'Tessera' : `Tessera (${store})`,
    kind: 'tessera',
    store,
    plan: scenario.plan,
    async start() {
      const redis = store === 'redis' ? await ctx.ensureRedis() : null;
      const port = await freePort();
      const config = buildBenchConfig({
        port,
        store: store ?? 'memory',
        ...(redis === null ? {} : { redisUrl: redis.url }),
        keyPrefix: `bench:${scenario.name}:${port}:`,
        key: await ctx.key(scenario.signing ?? 'ES256'),
        threads: ctx.options.threads,
      });
      scenario.configure?.(config);
      const configFile = path.join(ctx.tmp, `${scenario.name}-${id.replace(/\W+/g, '_')}.json`);
      writeFileSync(configFile, JSON.stringify(config, null, 2));
      const server = await startChild({
        name: id,
        entry: gatewayEntry,
        args: [configFile, ctx.target.kind, ...(ctx.options.gatewayRoot === undefined ? [] : [path.resolve(ctx.options.gatewayRoot)])],
        nodeArgs: profileArgs(ctx, scenario.name, id),
      });
      return { server, storePid: redis?.pid ?? null };
    },
  };
}

function peerContender(scenario: ActiveScenario, peer: PeerDefinition, ctx: RunContext): Contender {
  return {
    id: peer.name,
    label: peer.name,
    kind: 'peer',
    store: null,
    plan: peer.plan,
    async start() {
      const key = await ctx.key(peer.signing);
      const server = await startChild({
        name: peer.name,
        entry: peerEntry,
        args: [peer.mode, key.file, String(await freePort())],
        nodeArgs: profileArgs(ctx, scenario.name, peer.name),
      });
      return { server, storePid: null };
    },
  };
}

function ceilingContender(scenario: ActiveScenario, ctx: RunContext): Contender {
  return {
    id: 'uws-ceiling',
    label: 'uWS trivial POST',
    kind: 'ceiling',
    store: null,
    plan: scenario.plan,
    async start() {
      const server = await startChild({ name: 'uws-ceiling', entry: ceilingEntry, nodeArgs: profileArgs(ctx, scenario.name, 'uws-ceiling') });
      return { server, storePid: null };
    },
  };
}

/**
 * The contenders of a scenario, in the order each round runs them: Tessera on each store asked
 * for, then the peers. `--store` filters Tessera's stores; scenarios that touch no store ignore it.
 */
export function contendersOf(scenario: ActiveScenario, ctx: RunContext): Contender[] {
  if (scenario.server === 'ceiling') return [ceilingContender(scenario, ctx)];
  const wanted = ctx.options.stores;
  const stores: (StoreKind | null)[] =
    scenario.stores.length === 0 ? [null] : scenario.stores.filter((store) => wanted === undefined || wanted.includes(store));
  if (stores.length === 0) return [];
  return [...stores.map((store) => tesseraContender(scenario, store, ctx)), ...(scenario.peers ?? []).map((peer) => peerContender(scenario, peer, ctx))];
}
