import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../test/helpers/free_port.js';
import type { ContenderKind } from '../report/results.js';
import type { LoadRequest } from '../load/load_generator.js';
import { ceiling } from '../scenarios/ceiling.js';
import { sendOnce } from '../scenarios/requests.js';
import type {
  ActiveScenario,
  BackgroundLoad,
  PeerDefinition,
  RequestKind,
  RequestPlan,
  ServerAccess,
  StoreKind,
} from '../scenarios/scenario.js';
import { buildBenchConfig } from '../support/bench_config.js';
import { repoRoot, startChild, type ChildServer } from '../support/child_server.js';
import { seedTessera, type SeededItem } from '../support/seed.js';
import { publishedKeySet, type KeySet } from '../support/token_signatures.js';
import type { RunContext } from './context.js';
import type { GatewayTarget } from './target.js';

const gatewayEntry = fileURLToPath(new URL('../gateway_process.ts', import.meta.url));
const ceilingEntry = fileURLToPath(new URL('../ceiling_process.ts', import.meta.url));
const peerEntry = fileURLToPath(new URL('../peers/oidc_provider_process.ts', import.meta.url));

export interface StartedContender {
  server: ChildServer;
  /** redis-server, whose CPU is the store's share of a Tessera-on-Redis request. */
  storePid: number | null;
  /** What a scenario's preparation may do with this server. */
  access: ServerAccess;
  /** Its published signing keys, which the depth checks verify tokens with; null: it signs nothing. */
  keys: KeySet | null;
}

/** One server a scenario measures: Tessera on one store, a peer, or the ceiling endpoint. */
export interface Contender {
  id: string;
  label: string;
  kind: ContenderKind;
  store: StoreKind | null;
  /** A guess of its req/s, to size the first supply of a run. */
  expectedRps: number;
  /** The load that runs beside each of its runs (runner/background.ts), or null. */
  background: BackgroundLoad | null;
  /** With a background load: the id of the contender that is the same server without it. */
  alone: string | null;
  /** Tessera's processes on one port (`--processes`); 1 for every other server. */
  processes: number;
  /** With more than one process: the id of the same server with one, when it is measured too. */
  oneProcess: string | null;
  /** `--events-beside`: the events sink of this twin of a Tessera contender, and that contender's id; else null. */
  events: 'file' | 'redis' | null;
  eventsOff: string | null;
  start(): Promise<StartedContender>;
  /** The kinds of request it is sent, built once it runs. */
  requestKinds(access: ServerAccess): Promise<RequestKind[]>;
}

/** The scenarios `--events-beside` adds an events-on twin to: the one the events bar judges (report/bars.ts). */
export const eventsBesideScenarios: readonly string[] = ['client_credentials'];

/** One fixed request as a workload of one kind. */
function fixedKind(name: string, plan: RequestPlan): RequestKind[] {
  return [{ name: name.replace(/\W+/g, '_'), weight: 1, ...plan }];
}

function kindsOf(name: string, plan: RequestPlan | undefined, workload: ((server: ServerAccess) => Promise<RequestKind[]>) | undefined) {
  return async (access: ServerAccess): Promise<RequestKind[]> => {
    if (workload !== undefined) return workload(access);
    if (plan === undefined) throw new Error(`${name} has neither a plan nor a workload`);
    return fixedKind(name, plan);
  };
}

/** Sends one request and returns the JSON object answered (status 200 only). */
async function call(url: string, request: LoadRequest): Promise<Record<string, unknown>> {
  const response = await sendOnce(url, request, 30_000);
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${request.method} ${request.path}: status ${response.status}: ${text.slice(0, 200)}`);
  const value: unknown = JSON.parse(text);
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error(`${request.method} ${request.path}: not a JSON object`);
  return value as Record<string, unknown>;
}

/** A started server's published keys; a server whose keys cannot be read is stopped again. */
async function keysOf(server: ChildServer): Promise<KeySet> {
  try {
    return await publishedKeySet(server.url);
  } catch (err) {
    await server.stop();
    throw new Error(`${server.url}: no published signing keys (${err instanceof Error ? err.message : String(err)})`);
  }
}

/** Where `--cpu-prof` writes a contender's profiles: one folder each, a file per thread inside. */
export function profileFolder(scenario: string, id: string): string {
  return `${scenario}-${id.replace(/\W+/g, '_')}`;
}

function profileArgs(ctx: RunContext, scenario: string, id: string): string[] {
  if (ctx.profileDir === null) return [];
  return ['--cpu-prof', `--cpu-prof-dir=${path.join(ctx.profileDir, profileFolder(scenario, id))}`];
}

/** The checkout a Tessera contender runs: the measured one, or the `--baseline-root` one. */
interface Checkout {
  kind: 'tessera' | 'baseline';
  /** Passed to gateway_process.ts; undefined: this checkout. */
  root: string | undefined;
  target: GatewayTarget;
}

/** How a contender of `processes` processes is named: ids of one process stay as they were. */
export function processesSuffix(processes: number): { id: string; label: string } {
  return { id: processes === 1 ? '' : `/x${processes}`, label: `${processes} process${processes === 1 ? '' : 'es'}` };
}

function tesseraContender(
  scenario: ActiveScenario,
  store: StoreKind | null,
  ctx: RunContext,
  checkout: Checkout,
  background: BackgroundLoad | null = null,
  processes = 1,
  /** An events-on twin (`--events-beside`): the sink it runs with. */
  twinEvents: 'file' | 'redis' | null = null,
): Contender {
  const single = store === null ? checkout.kind : `${checkout.kind}/${store}`;
  const alone = `${single}${processesSuffix(processes).id}`;
  const id = twinEvents !== null ? `${alone}+events-${twinEvents}` : background === null ? alone : `${alone}+${background.kind}`;
  const name = checkout.kind === 'baseline' ? 'Tessera baseline' : 'Tessera';
  // Named by their count only when the run compares counts.
  const counted = ctx.options.processes.length > 1 || processes > 1 ? processesSuffix(processes).label : null;
  const qualifiers = [...(store === null ? [] : [store]), ...(counted === null ? [] : [counted])];
  const label = qualifiers.length === 0 ? name : `${name} (${qualifiers.join(', ')})`;
  return {
    id,
    label: twinEvents !== null ? `${label} + audit events (${twinEvents})` : background === null ? label : `${label} + ${background.name}`,
    kind: checkout.kind,
    store,
    expectedRps: (scenario.expectedRps ?? 20_000) * processes,
    background,
    alone: background === null ? null : alone,
    processes,
    oneProcess: processes > 1 && ctx.options.processes.includes(1) ? `${single}${background === null ? '' : `+${background.kind}`}` : null,
    events: twinEvents,
    eventsOff: twinEvents === null ? null : alone,
    requestKinds: kindsOf(scenario.name, scenario.plan, scenario.workload),
    async start() {
      const redis = store === 'redis' ? await ctx.ensureRedis() : null;
      // `--events` for the checkout under test, `--baseline-events` (none by default) for the
      // baseline: a baseline of the same commit is then "events off".
      const events = twinEvents ?? (checkout.kind === 'tessera' ? ctx.options.events : ctx.options.baselineEvents);
      const eventsEnv: Record<string, string> =
        events === 'none'
          ? {}
          : {
              BENCH_EVENTS: events,
              BENCH_EVENTS_DIR: ctx.tmp,
              ...(events === 'redis' ? { BENCH_EVENTS_REDIS_URL: (redis ?? (await ctx.ensureRedis())).url } : {}),
            };
      // Scenarios with a workload may seed the store: the gateway loads the bench seed grant.
      const seeding = scenario.workload !== undefined;
      const port = await freePort();
      const config = buildBenchConfig({
        port,
        store: store ?? 'memory',
        ...(redis === null ? {} : { redisUrl: redis.url }),
        keyPrefix: `bench:${scenario.name}:${port}:`,
        key: await ctx.key(scenario.signing ?? 'ES256'),
        threads: ctx.options.threads,
        seeding,
      });
      // Each checkout's own validators/: a baseline runs the ones it shipped with.
      scenario.configure?.(config, { gatewayRoot: checkout.root ?? repoRoot });
      const configFile = path.join(ctx.tmp, `${scenario.name}-${id.replace(/\W+/g, '_')}.json`);
      writeFileSync(configFile, JSON.stringify(config, null, 2));
      const server = await startChild({
        name: id,
        entry: gatewayEntry,
        args: [configFile, checkout.target.kind, ...(checkout.root === undefined ? [] : [checkout.root])],
        nodeArgs: profileArgs(ctx, scenario.name, id),
        env: {
          ...(seeding ? { BENCH_SEED_GRANT: '1' } : {}),
          ...eventsEnv,
          ...(processes > 1 ? { BENCH_PROCESSES: String(processes) } : {}),
        },
      });
      const access: ServerAccess = {
        url: server.url,
        call: (request) => call(server.url, request),
        seed: (request) => seedTessera(server.url, request),
      };
      return { server, storePid: redis?.pid ?? null, access, keys: await keysOf(server) };
    },
  };
}

function peerContender(scenario: ActiveScenario, peer: PeerDefinition, ctx: RunContext): Contender {
  const store = peer.store ?? null;
  const id = store === null ? peer.name : `${peer.name}/${store}`;
  return {
    id,
    label: peer.name,
    kind: 'peer',
    store,
    expectedRps: peer.expectedRps ?? 2_000,
    background: null,
    alone: null,
    processes: 1,
    oneProcess: null,
    events: null,
    eventsOff: null,
    requestKinds: kindsOf(scenario.name, peer.plan, peer.workload),
    async start() {
      const key = await ctx.key(peer.signing);
      const redis = store === 'redis' ? await ctx.ensureRedis() : null;
      const server = await startChild({
        name: id,
        entry: peerEntry,
        args: [peer.mode, key.file, String(await freePort()), ...(redis === null ? [] : [redis.url])],
        nodeArgs: profileArgs(ctx, scenario.name, id),
      });
      const access: ServerAccess = {
        url: server.url,
        call: (request) => call(server.url, request),
        // Its own models save what it issues (peers/oidc_provider_process.ts).
        seed: async (request) => (await server.ask(request)) as SeededItem[],
      };
      return { server, storePid: redis?.pid ?? null, access, keys: await keysOf(server) };
    },
  };
}

/**
 * The bare uWS endpoint: the `ceiling` scenario's one contender, and in every scenario with a
 * floor the floor's bare request, measured in each round beside the scenario's servers
 * (runner/floors.ts) with the ceiling's own request.
 */
function ceilingContender(scenario: ActiveScenario, ctx: RunContext): Contender {
  const own = scenario.server === 'ceiling';
  return {
    id: 'uws-ceiling',
    label: own ? 'uWS trivial POST' : 'uWS trivial POST (floor)',
    kind: 'ceiling',
    store: null,
    expectedRps: (own ? scenario.expectedRps : ceiling.expectedRps) ?? 50_000,
    background: null,
    alone: null,
    processes: 1,
    oneProcess: null,
    events: null,
    eventsOff: null,
    requestKinds: own ? kindsOf(scenario.name, scenario.plan, scenario.workload) : kindsOf(ceiling.name, ceiling.plan, undefined),
    async start() {
      const server = await startChild({
        name: 'uws-ceiling',
        entry: ceilingEntry,
        nodeArgs: profileArgs(ctx, scenario.name, 'uws-ceiling'),
      });
      const access: ServerAccess = {
        url: server.url,
        call: (request) => call(server.url, request),
        seed: () => Promise.reject(new Error('the ceiling endpoint has no store')),
      };
      // Its fixed answer is token-shaped, not signed.
      return { server, storePid: null, access, keys: null };
    },
  };
}

/**
 * The contenders of a scenario, in the order each round runs them: Tessera on each store asked
 * for, each followed by the baseline on that store when there is one (back to back, so the two
 * meet the most similar machine), then the peers, then, when the scenario has a floor, the bare
 * uWS endpoint for the floor's bare request in that round. `--store` filters Tessera's stores; scenarios
 * that touch no store ignore it. With `--processes 1,2` each Redis contender is measured once per
 * count (memory-store ones with one process). A scenario with a background load measures each Tessera (and
 * baseline) contender twice, in two processes of its own: alone, then right after under the load.
 */
export function contendersOf(scenario: ActiveScenario, ctx: RunContext): Contender[] {
  if (scenario.server === 'ceiling') return [ceilingContender(scenario, ctx)];
  const wanted = ctx.options.stores;
  const stores: (StoreKind | null)[] =
    scenario.stores.length === 0 ? [null] : scenario.stores.filter((store) => wanted === undefined || wanted.includes(store));
  if (stores.length === 0) return [];
  // A peer on a store runs when Tessera on that store does.
  const peers = (scenario.peers ?? []).filter((peer) => peer.store === undefined || stores.includes(peer.store));
  const measured: Checkout = {
    kind: 'tessera',
    root: ctx.options.gatewayRoot === undefined ? undefined : path.resolve(ctx.options.gatewayRoot),
    target: ctx.target,
  };
  const baseline: Checkout | null =
    ctx.baseline === null ? null : { kind: 'baseline', root: ctx.baseline.root, target: ctx.baseline.target };
  const background = scenario.background ?? null;
  // Several processes share their state through Redis only: on the memory store (and in scenarios
  // without a store, which run on it) a gateway refuses them, so those are measured with one.
  const countsOn = (store: StoreKind | null): number[] => {
    const counts = ctx.options.processes.filter((count) => count === 1 || store === 'redis');
    return counts.length === 0 ? [1] : counts;
  };
  // `--events-beside`: the measured checkout with events on, right after itself with them off, in
  // the scenario whose bar judges the events' cost (report/bars.ts).
  const twin = ctx.options.eventsBeside === 'none' || !eventsBesideScenarios.includes(scenario.name) ? null : ctx.options.eventsBeside;
  const withBackground = (store: StoreKind | null, checkout: Checkout): Contender[] =>
    countsOn(store).flatMap((processes) => [
      tesseraContender(scenario, store, ctx, checkout, null, processes),
      ...(twin === null || checkout.kind !== 'tessera' || processes !== 1
        ? []
        : [tesseraContender(scenario, store, ctx, checkout, null, processes, twin)]),
      ...(background === null ? [] : [tesseraContender(scenario, store, ctx, checkout, background, processes)]),
    ]);
  const tessera = stores.flatMap((store) => [
    ...withBackground(store, measured),
    ...(baseline === null ? [] : withBackground(store, baseline)),
  ]);
  return [
    ...tessera,
    ...peers.map((peer) => peerContender(scenario, peer, ctx)),
    ...(scenario.floor === undefined ? [] : [ceilingContender(scenario, ctx)]),
  ];
}
