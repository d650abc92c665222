import { parseArgs } from 'node:util';
import type { StoreKind } from '../scenarios/scenario.js';

export interface BenchOptions {
  /** Scenario names (or `sign`) from the command line; empty = every current scenario. */
  names: string[];
  durationS: number;
  warmupS: number;
  connections: number;
  /** Rounds per contender; undefined = 2 when a scenario has several contenders, else 1. */
  rounds: number | undefined;
  quick: boolean;
  stores: StoreKind[] | undefined;
  loadgen: 'wrk' | 'autocannon' | undefined;
  loadgenThreads: number;
  target: 'dist' | 'source' | undefined;
  /** Gateway worker threads (per process). */
  threads: number;
  /**
   * Gateway processes sharing the port (`tessera start --processes N`, docs/operations.md
   * "Several processes"): one contender per count and store, interleaved; [1] by default.
   */
  processes: number[];
  /** Another checkout of Tessera to run instead of this one (A/B against a branch or a fix). */
  gatewayRoot: string | undefined;
  /** Free text saved with the results, e.g. what a `--gateway-root` checkout contains. */
  label: string | undefined;
  /**
   * A second checkout measured beside the first, each of its stores as one more contender in every
   * round, so that a change's before and after meet the same noise.
   */
  baselineRoot: string | undefined;
  /** Free text saved with the results for the baseline (e.g. its commit). */
  baselineLabel: string | undefined;
  save: boolean;
  /** `--out DIR`: where the results files go instead of the default (report/results.ts, `resultsDirectory`). */
  out: string | undefined;
  /**
   * Audit events of the gateway under test (not of a baseline): `file` (JSON lines in the run's
   * temporary folder), `redis` (a Redis Stream on the bench Redis), or `none`.
   */
  events: 'none' | 'file' | 'redis';
  /**
   * Audit events of the `--baseline-root` gateway (`none` unless asked): with the same sink on
   * both, one run compares two versions of the events' own cost.
   */
  baselineEvents: 'none' | 'file' | 'redis';
  /**
   * `--events-beside file|redis`: in client_credentials, a twin of the Tessera row with audit
   * events on, measured right after it in every round, for the events bar (report/bars.ts).
   */
  eventsBeside: 'none' | 'file' | 'redis';
  cpuProf: boolean;
  /**
   * `soak` (only when named): its seconds (`--duration`, else 300), the connections of each burst,
   * the seconds between bursts, and the steady load's rate in req/s (bench/README.md, "Soak and bursts").
   */
  soak: { durationS: number; burstSize: number; burstEveryS: number; rate: number };
  /** `scale-store`: the counts of clients kept in the store (bench/scale/stored_clients.ts); undefined = its defaults. */
  storedClients: number[] | undefined;
  help: boolean;
}

export const usage = `Usage: npm run bench -- [scenario… | sign | scale] [options]

With no scenario, runs every current scenario and the sign micro-bench. \`scale\` (only when
named, ~7 min) measures start-up, per-request cost and store memory as clients and records grow.
\`soak\` (only when named, 5 min) runs the mixed load on Redis with bursts of new connections and
fails unless every request is answered and nothing is left in flight. \`scale-store\` (only when
named) measures start-up, RSS and per-request cost with clients kept in the store (Redis).

Options:
  --duration S         measured seconds per contender and round (10; --quick: 3)
  --warmup S           warm-up seconds before each measured run (10; --quick: 1); gives
                       node-oidc-provider's JIT time to settle
  --connections N      concurrent connections (64)
  --rounds N           rounds per contender, interleaved (2 when a scenario has a peer or
                       several stores, else 1; --quick: 1)
  --quick              smoke run: 3 s, 1 s warm-up, 1 round
  --store memory|redis Tessera store(s) to measure (both where the scenario uses a store)
  --loadgen wrk|autocannon   (wrk when installed)
  --loadgen-threads N  wrk threads (1)
  --target dist|source run the compiled gateway (default when dist/ is up to date) or the sources
  --threads N          gateway worker threads per process (2, the shipped default)
  --processes N[,M…]   gateway processes on one port (1); a list measures each count as its own
                       contender, interleaved, and prints the scaling against 1 process. Above 1
                       needs Redis: memory-store contenders are measured with 1 process only
  --gateway-root DIR   run the gateway of another checkout (a worktree of a branch or a fix)
  --label TEXT         a note saved with the results (what the run measures, e.g. the fix applied)
  --baseline-root DIR  also run the gateway of another checkout (before a change), interleaved in
                       every round, and compare it per store below the table
  --baseline-label TEXT
                       a note on the baseline saved with the results (e.g. its commit)
  --events none|file|redis
                       audit events of the gateway under test (none): JSON lines to a file, or a
                       Redis Stream on the bench Redis; a --baseline-root runs without
  --baseline-events none|file|redis
                       audit events of the --baseline-root gateway (none): the same sink on both
                       compares two versions of the events' cost in one run
  --events-beside file|redis
                       in client_credentials, also run this checkout with audit events on, right
                       after itself with them off in every round: the events bar (≤ 10% more CPU
                       per request) is then judged from this run
  --cpu-prof           profile the gateway processes (node --cpu-prof) and print the hottest functions
  --out DIR            write <timestamp>.json and .svg here; default $TESSERA_BENCH_RESULTS, else
                       $XDG_CACHE_HOME/tessera-bench/results (~/.cache/…): outside the repository
  --no-save            do not write the results files

scale-store:
  --stored-clients N[,M…]
                       counts of clients kept in the store (10,100000,1000000; --quick: 10,10000)

soak:
  --duration S         seconds of the soak (300 when not given)
  --burst-size N       new connections per burst, one request each (2000)
  --burst-every S      seconds between bursts (10)
  --rate N             the steady load's requests per second in all, over --connections (500)
`;

class UsageError extends Error {}
export { UsageError };

function positiveNumber(name: string, value: string | undefined, fallback: number, integer = false): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n)))
    throw new UsageError(`--${name} must be a positive ${integer ? 'integer' : 'number'}`);
  return n;
}

export function parseOptions(argv: readonly string[]): BenchOptions {
  const save = !argv.includes('--no-save');
  const { values, positionals } = parseArgs({
    args: argv.filter((arg) => arg !== '--no-save'),
    allowPositionals: true,
    strict: true,
    options: {
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      rounds: { type: 'string' },
      quick: { type: 'boolean', default: false },
      store: { type: 'string', multiple: true },
      loadgen: { type: 'string' },
      'loadgen-threads': { type: 'string' },
      target: { type: 'string' },
      threads: { type: 'string' },
      processes: { type: 'string', multiple: true },
      'gateway-root': { type: 'string' },
      out: { type: 'string' },
      label: { type: 'string' },
      'baseline-root': { type: 'string' },
      'baseline-label': { type: 'string' },
      'cpu-prof': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
      events: { type: 'string' },
      'baseline-events': { type: 'string' },
      'events-beside': { type: 'string' },
      'burst-size': { type: 'string' },
      'burst-every': { type: 'string' },
      rate: { type: 'string' },
      'stored-clients': { type: 'string', multiple: true },
    },
  });
  const quick = values.quick === true;
  const stores = values.store?.flatMap((s) => s.split(','));
  for (const store of stores ?? []) {
    if (store !== 'memory' && store !== 'redis') throw new UsageError(`--store must be memory or redis, not "${store}"`);
  }
  const loadgen = values.loadgen;
  if (loadgen !== undefined && loadgen !== 'wrk' && loadgen !== 'autocannon') throw new UsageError('--loadgen must be wrk or autocannon');
  const target = values.target;
  if (target !== undefined && target !== 'dist' && target !== 'source') throw new UsageError('--target must be dist or source');
  const events = values.events ?? 'none';
  if (events !== 'none' && events !== 'file' && events !== 'redis') throw new UsageError('--events must be none, file or redis');
  const baselineEvents = values['baseline-events'] ?? 'none';
  if (baselineEvents !== 'none' && baselineEvents !== 'file' && baselineEvents !== 'redis')
    throw new UsageError('--baseline-events must be none, file or redis');
  const eventsBeside = values['events-beside'] ?? 'none';
  if (eventsBeside !== 'none' && eventsBeside !== 'file' && eventsBeside !== 'redis')
    throw new UsageError('--events-beside must be none, file or redis');
  if (eventsBeside !== 'none' && events !== 'none')
    throw new UsageError('--events-beside compares events on with events off: it needs --events none');
  const processes = [...new Set((values.processes ?? ['1']).flatMap((list) => list.split(',')))].map((count) => {
    const n = Number(count);
    if (!Number.isInteger(n) || n < 1 || n > 64) throw new UsageError(`--processes must be whole numbers from 1 to 64, not "${count}"`);
    return n;
  });
  processes.sort((a, b) => a - b);
  const baselineRoot = values['baseline-root'];
  // `--baseline-root ""` would resolve to the current directory: a silent A/A run nobody asked for.
  if (baselineRoot !== undefined && baselineRoot.trim() === '') throw new UsageError('--baseline-root needs a directory');
  if (values['baseline-label'] !== undefined && baselineRoot === undefined) throw new UsageError('--baseline-label needs --baseline-root');
  if (values.out !== undefined && values.out.trim() === '') throw new UsageError('--out needs a directory');
  if (values.out !== undefined && !save) throw new UsageError('--out and --no-save: one or the other');
  if (values['baseline-events'] !== undefined && baselineRoot === undefined)
    throw new UsageError('--baseline-events needs --baseline-root');
  const storedClients = values['stored-clients']
    ?.flatMap((list) => list.split(','))
    .map((count) => {
      const n = Number(count);
      if (!Number.isInteger(n) || n < 1) throw new UsageError(`--stored-clients must be positive whole numbers, not "${count}"`);
      return n;
    });
  return {
    names: positionals,
    durationS: positiveNumber('duration', values.duration, quick ? 3 : 10),
    warmupS: positiveNumber('warmup', values.warmup, quick ? 1 : 10),
    connections: positiveNumber('connections', values.connections, 64, true),
    rounds: values.rounds === undefined ? (quick ? 1 : undefined) : positiveNumber('rounds', values.rounds, 1, true),
    quick,
    stores: stores as StoreKind[] | undefined,
    loadgen,
    loadgenThreads: positiveNumber('loadgen-threads', values['loadgen-threads'], 1, true),
    target,
    threads: positiveNumber('threads', values.threads, 2, true),
    processes,
    gatewayRoot: values['gateway-root'],
    label: values.label,
    baselineRoot,
    baselineLabel: values['baseline-label'],
    save,
    out: values.out,
    events,
    baselineEvents,
    eventsBeside,
    cpuProf: values['cpu-prof'] === true,
    storedClients,
    soak: {
      durationS: positiveNumber('duration', values.duration, 300),
      burstSize: positiveNumber('burst-size', values['burst-size'], 2000, true),
      burstEveryS: positiveNumber('burst-every', values['burst-every'], 10),
      rate: positiveNumber('rate', values.rate, 500),
    },
    help: values.help === true,
  };
}
