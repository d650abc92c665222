/**
 * The results file, `<timestamp>.json`, one per run, written outside the repository
 * (`resultsDirectory`); the repository keeps one, `bench/results/latest.json`, the newest full run
 * (bench/README.md, "Results"). Its types are the file format: the code that fills each part
 * (sign.ts, report/throughput_bound.ts, runner/) imports them from here.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { LatencyMs, LoadResult } from '../load/load_generator.js';
import type { RequestFloor, StoreCommand } from '../scenarios/floor.js';
import type { StoreKind } from '../scenarios/scenario.js';
import type { BenchAlgorithm } from '../support/keys.js';
import type { GitInfo } from '../support/git_info.js';
import type { MachineInfo } from '../support/machine.js';
import type { RssTrend } from '../support/rss_trend.js';
import type { SoakResults } from './soak.js';
import type { ScaleResults } from './scale_results.js';

export interface CpuFigures {
  /** CPU seconds per second of the server process (all its threads): 1.0 = one core busy. */
  serverCores: number | null;
  serverUsPerRequest: number | null;
  /** redis-server, for Tessera on the Redis store. */
  storeCores: number | null;
  storeUsPerRequest: number | null;
  loadgenCores: number | null;
  /** Processes outside the bench (a shared machine): busy machine time minus everything above. */
  otherCores: number | null;
}

/**
 * The background load of one run (a scenario's `background`, e.g. a sign-in flood), over its whole
 * duration, which covers the measured window with a second either side.
 */
export interface BackgroundRound {
  name: string;
  connections: number;
  durationS: number;
  /** Answers of every sort the load generator received. */
  requests: number;
  /** Served: answers that met the request's expectation (a token). */
  answered: number;
  /** Refused by the server as expected when it sheds load (503 from a bounded lane). */
  shed: number;
  /** Answers that were neither: each voids the measured run. */
  unexpected: number;
  /**
   * Requests sent and never answered by the end (null: not counted). Up to one per connection is
   * in flight at any time; many more than the connections the server sheds means it held requests.
   */
  unanswered: number | null;
  /** Requests left unanswered for 2 s (counted, not an error: a full queue may wait that long). */
  timeouts: number;
  /** Connect, read and write errors. */
  socketErrors: number;
  /** Latency of all its answers, served and shed alike. */
  latencyMs: LatencyMs;
  /** CPU of its load generator over the measured window (1.0 = one core); null outside Linux. */
  loadgenCores: number | null;
  /** Why the measured run does not count because of it, or null. */
  problem: string | null;
}

export interface RoundResult {
  round: number;
  load: LoadResult;
  valid: boolean;
  invalidReason: string | null;
  cpu: CpuFigures;
  /** Share of machine CPU time stolen by the hypervisor during the measured run. */
  stealPercent: number | null;
  warmup: { rps: number; invalidReason: string | null };
  /** Tessera: mean requests per task sent to the worker pool in the measured window (/metrics). */
  batch: number | null;
  /**
   * Tessera: server CPU per request on its main (uWS) thread and on all its other threads (workers,
   * V8 and libuv helpers), from /proc/<pid>/task; absent in older files, null outside Linux.
   */
  threads?: ThreadFigures | null;
  /** The server's RSS sampled once a second through the measured run (absent in older files). */
  rss?: RssTrend | null;
  /** Items (refresh tokens, codes) made for the measured run, when its requests consume them. */
  itemsMade: number | null;
  /** The background load during the measured run, for a contender measured under one. */
  background?: BackgroundRound | null;
}

/** Server CPU per request on each side of the thread boundary (bench/README.md, "The columns": by thread). */
export interface ThreadFigures {
  mainUsPerRequest: number;
  othersUsPerRequest: number;
}

/** Medians over the valid rounds. */
export interface Summary {
  validRounds: number;
  rps: number;
  latencyMs: LatencyMs;
  serverCores: number | null;
  serverUsPerRequest: number | null;
  storeUsPerRequest: number | null;
  loadgenCores: number | null;
  otherCores: number | null;
  stealPercent: number | null;
}

export interface MemoryFigures {
  idleRssBytes: number | null;
  afterRssBytes: number | null;
  peakRssBytes: number | null;
}

/**
 * `tessera` is the checkout measured (this one or `--gateway-root`); `baseline` is Tessera from
 * `--baseline-root`, measured beside it and compared with it, never with the peer or the bound.
 */
export type ContenderKind = 'tessera' | 'baseline' | 'peer' | 'ceiling';

/** One kind of request a contender was sent (its share, and whether a supply fed it). */
export interface KindDescription {
  name: string;
  weight: number;
  supply: 'once' | 'cycle' | null;
  method: string;
  path: string;
}

export interface ContenderResult {
  id: string;
  label: string;
  kind: ContenderKind;
  store: StoreKind | null;
  detail: Record<string, unknown>;
  kinds: KindDescription[];
  rounds: RoundResult[];
  summary: Summary | null;
  memory: MemoryFigures;
  /** Set when the contender could not be measured (start-up, preflight, crash). */
  error: string | null;
  /** The background load it was measured under (its name); absent: none. */
  background?: string;
  /** With `background`: the id of the same server measured without it, in the same rounds. */
  alone?: string;
  /** Tessera's processes on one port (`--processes`); absent: one. */
  processes?: number;
  /** With `processes`: the id of the same server with one process, measured in the same rounds. */
  oneProcess?: string;
  /**
   * `--events-beside`: the audit events sink this twin of a Tessera row runs with; the twin is
   * measured right after `eventsOff`, the same checkout with events off, in each round.
   */
  events?: 'file' | 'redis';
  eventsOff?: string;
}

export interface RatioResult {
  tessera: string;
  peer: string;
  /** Tessera median req/s ÷ peer median req/s. */
  rps: number;
  /** The same per round (Tessera round i ÷ peer round i, both valid). */
  perRound: number[];
  tesseraUsPerRequest: number | null;
  peerUsPerRequest: number | null;
}

/** The measured checkout against the baseline on one store (`--baseline-root`). */
export interface BaselineComparison {
  store: StoreKind | null;
  tessera: string;
  baseline: string;
  tesseraRps: number;
  baselineRps: number;
  /** Tessera median req/s ÷ baseline median req/s: above 1, the measured checkout is faster. */
  rps: number;
  /** The same per round (Tessera round i ÷ baseline round i, both valid). */
  perRound: number[];
  tesseraUsPerRequest: number | null;
  baselineUsPerRequest: number | null;
  /** Tessera server µs/req ÷ baseline server µs/req: below 1, the measured checkout costs less. */
  usPerRequest: number | null;
  /** The same for redis-server's CPU per request, on the Redis store. */
  tesseraStoreUsPerRequest: number | null;
  baselineStoreUsPerRequest: number | null;
  storeUsPerRequest: number | null;
}

/** A contender under a background load against the same server alone (report/under_load.ts). */
export interface UnderLoadComparison {
  background: string;
  /** Ids: under the load, and alone. */
  loaded: string;
  alone: string;
  loadedLatencyMs: LatencyMs;
  aloneLatencyMs: LatencyMs;
  loadedRps: number;
  aloneRps: number;
  /** Medians over its valid measured runs of the background load's figures. */
  backgroundPerRun: {
    connections: number;
    answeredPerS: number;
    shedPerS: number;
    timeouts: number;
    socketErrors: number;
    loadgenCores: number | null;
  } | null;
}

/** Tessera with several processes against itself with one (`--processes 1,2`, report/process_scaling.ts). */
export interface ProcessScaling {
  store: StoreKind | null;
  processes: number;
  /** Ids: with several processes, and with one. */
  scaled: string;
  single: string;
  scaledRps: number;
  singleRps: number;
  /** Median req/s with `processes` ÷ with one: `processes` would be perfect scaling. */
  rps: number;
  /** The same per round (both valid). */
  perRound: number[];
  /** Server CPU (all processes) per request, with several and with one. */
  scaledUsPerRequest: number | null;
  singleUsPerRequest: number | null;
  /** Server cores busy, with several and with one. */
  scaledCores: number | null;
  singleCores: number | null;
  scaledP99Ms: number;
  singleP99Ms: number;
}

export interface ScenarioResult {
  name: string;
  measures: string;
  contenders: ContenderResult[];
  ratios: RatioResult[];
  /** One per store when the run had `--baseline-root` (absent in older files). */
  baselines?: BaselineComparison[];
  /** One per contender measured under a scenario's background load (absent without one). */
  underLoad?: UnderLoadComparison[];
  /** One per contender with several processes whose one-process twin was measured (`--processes`). */
  scaling?: ProcessScaling[];
  /** Figures measured beside the scenario (e.g. the password hash's cost). */
  notes: string[];
  /** Its declared floor, what it came to in this run, and each row against it (absent: no floor). */
  floor?: ScenarioFloor;
  /** True when any contender had an error or an invalid round. */
  hasErrors: boolean;
}

export interface BenchSettings {
  /** `--label`: what the person running it said this run is. */
  label: string | null;
  durationS: number;
  warmupS: number;
  connections: number;
  rounds: number | 'auto';
  quick: boolean;
  loadgen: { name: string; version: string; threads: number };
  gateway: {
    target: 'dist' | 'source';
    threads: number;
    /** `--processes`: the process counts measured (absent: one). */
    processes?: number[];
    note: string | null;
    /** The checkout measured when it is not this one (`--gateway-root`). */
    root: string | null;
    /** The measured checkout's commit, and whether its gateway code had uncommitted changes. */
    git: GitInfo | null;
  };
  /** `--baseline-root`: the checkout measured beside the gateway (absent in older files). */
  baseline?: {
    root: string;
    /** `--baseline-label`. */
    label: string | null;
    target: 'dist' | 'source';
    note: string | null;
    git: GitInfo | null;
  } | null;
  redis: string | null;
}

/** One case of the `sign` micro-bench (sign.ts). */
export interface SignCase {
  name: string;
  signatures: number;
  seconds: number;
  /** Wall-clock rate. */
  perSecond: number;
  /** Process CPU time used (all threads: WebCrypto signs on the libuv pool). */
  cpuSeconds: number;
  /** Signatures per CPU-second: the per-core figure. */
  perCpuSecond: number;
}

export interface SignResults {
  durationS: number;
  cases: SignCase[];
  /** node:crypto sign per CPU-second ÷ jose SignJWT's best per CPU-second (either concurrency). */
  nodeCryptoOverJose: number | null;
  /** Verification cases (`signatures` counts verifications). */
  verifyCases?: SignCase[];
  /** node:crypto verify per CPU-second ÷ jose jwtVerify's best per CPU-second. */
  nodeCryptoVerifyOverJose?: number | null;
}

/**
 * The most `client_credentials` requests per second this machine can serve with the load
 * generator on the same cores, for ANY design that signs one ES256 token per request in Node and
 * answers HTTP no cheaper than a bare uWebSockets.js endpoint: every core busy with nothing but
 * the signature, the bare HTTP exchange and the load generator's own share. All three costs are
 * measured in the same run (the `sign` micro-bench, the `ceiling` scenario, the load generator's
 * CPU in Tessera's `client_credentials` runs), so the bound moves with the machine.
 */
export interface ThroughputBound {
  cores: number;
  /** One bare ES256 signature, µs of CPU. */
  signUs: number;
  /** The ceiling endpoint's server CPU per request. */
  httpUs: number;
  /** The load generator's CPU per request against Tessera. */
  loadgenUs: number;
  boundRps: number;
  tesseraRps: number;
  peerRps: number | null;
}

/** One signing algorithm, CPU µs on one thread of the bench process, measured in the run (runner/floors.ts). */
export interface CryptoCost {
  alg: BenchAlgorithm;
  /** One full JWT as the workers' `JwtSigner` makes it (header, claims, signature): a floor's signature. */
  jwtSignUs: number;
  /** The signature alone (node:crypto `sign`): the bound's (report/throughput_bound.ts). */
  signUs: number;
  /** One compact JWS verified: signature decoded, node:crypto `verify`. */
  verifyUs: number;
}

/** One Redis command of the store as a bare ioredis loop against the bench's redis-server. */
export interface StoreCommandCost {
  /** `storeCommandName` of the command. */
  name: string;
  command: StoreCommand;
  /** Commands measured, and how many were in flight on the one connection (auto-pipelined). */
  commands: number;
  inFlight: number;
  /** CPU µs per command in the bench process (ioredis) and in redis-server (null outside Linux). */
  clientUs: number;
  redisUs: number | null;
}

/**
 * Every part a floor is made of: measured once in the run, before the scenarios (the run's
 * `floors`), and again in every round of each scenario with a floor (`ScenarioFloor.rounds`).
 */
export interface FloorComponents {
  crypto: CryptoCost[];
  /**
   * The bare uWS POST: the ceiling endpoint's server CPU per request, from the `ceiling` scenario
   * when the run has it, else from a run of it for the floors alone, or (`round`) from the ceiling
   * endpoint measured in that round of the scenario beside its contenders. Null: not measured validly.
   */
  http: { usPerRequest: number; rps: number; source: 'ceiling' | 'floors' | 'round' } | null;
  /** Each command some scenario's floor sends on Redis (empty when no Redis contender runs). */
  store: StoreCommandCost[];
  /** One argon2id verify of the bench user's hash, CPU µs, four at a time as the password lane runs them (when the password scenario runs). */
  hashUs: number | null;
  /** The same for the cheap-hash user (`password_cheap_hash`); absent in older files. */
  cheapHashUs?: number | null;
  /**
   * The bare batch hand-off of each gateway contender, at the batch size it reported for the round
   * (support/handoff_cost.ts); measured in each round after its contenders. Absent in older files.
   */
  handoff?: ContenderHandoff[];
  /**
   * The floor's store commands through the memory store's bridge, for each memory-store contender
   * at its batch size (support/bridge_cost.ts). Absent in older files.
   */
  bridge?: ContenderBridge[];
}

/** One bare batch hand-off measurement (support/handoff_cost.ts). */
export interface HandoffCost {
  /** The mean batch size the gateway reported (`tessera_worker_batch_size`). */
  batch: number;
  /** The whole number of empty items each task carried. */
  size: number;
  tasks: number;
  /** CPU µs of one task, both sides, and per request (over `size`). */
  usPerTask: number;
  usPerRequest: number;
}

export interface ContenderHandoff extends HandoffCost {
  contender: string;
}

/** One store command through the memory store's bridge (support/bridge_cost.ts). */
export interface BridgeCommandCost {
  /** `storeCommandName` of the command. */
  name: string;
  command: StoreCommand;
  commands: number;
  /** Commands sent in one turn, as one message (the batch size). */
  perTurn: number;
  /** CPU µs per command, both threads. */
  us: number;
}

export interface ContenderBridge {
  contender: string;
  commands: BridgeCommandCost[];
}

/** One part of a floor in this run: `count` × its cost, µs per request. */
export interface FloorPart {
  /** E.g. `ES256 JWT`, `bare uWS POST`, `GET 214 B`. */
  name: string;
  count: number;
  us: number;
  /** Part of the floor of rows on Redis only (a store command). */
  redisOnly: boolean;
}

/** A scenario's floor in this run, by part, µs per request. */
export interface FloorBreakdown {
  /** Each part, for the report; the sums below add them up. */
  parts: FloorPart[];
  signUs: number;
  verifyUs: number;
  httpUs: number;
  /** The store commands, client + redis-server; null when they were not measured. Rows on Redis only. */
  storeUs: number | null;
  /** Subtracted from Tessera's figure (the argon2id verify); 0 when the floor excludes nothing, null when not measured. */
  excludedUs: number | null;
  /** Per gateway contender, the bare hand-off per request (the new floor's part; absent when not measured). */
  handoffUs?: Record<string, number>;
  /** Per memory-store contender, its store commands through the bridge per request (absent when not measured). */
  bridgeUs?: Record<string, number>;
}

/** One row's figure against the floor of one round (both measured in that round). */
export interface FloorRound {
  round: number;
  floorUs: number;
  figureUs: number;
  multiple: number;
  /** The round's new floor and multiple (null: its hand-off or bridge was not measured). */
  newFloorUs?: number | null;
  newMultiple?: number | null;
}

/** One row against its floor. */
export interface FloorRow {
  contender: string;
  /** The old floor (issue 18): signatures, verifications, the bare request, and on Redis the store commands. */
  floorUs: number;
  /** Server µs/req, on Redis + Redis µs/req, minus the excluded work. */
  figureUs: number;
  /**
   * `figureUs ÷ floorUs`; with `perRound`, the median of the rounds' multiples instead, each
   * round's figure over the floor measured in that same round.
   */
  multiple: number;
  /** Each valid round against its own floor (absent in files from before floors were measured per round). */
  perRound?: FloorRound[];
  /**
   * The new floor (issue 33): the old one + one bare batch hand-off per request + on the memory
   * store its store commands through the bridge; null when a part was not measured. Absent in older files.
   */
  newFloorUs?: number | null;
  /** `figureUs ÷ newFloorUs` (with `perRound`, the median of the rounds'); the bars judge this one. */
  newMultiple?: number | null;
  /** The new floor's parts for this row: hand-off and (memory) bridge µs per request. */
  handoffUs?: number | null;
  bridgeUs?: number | null;
  /**
   * True when the floor excludes work measured apart and the rounds' figures, once it is taken
   * off, spread wider than their median: what is left is that measurement's noise, not a cost.
   */
  undetermined?: boolean;
}

/** The parts of a floor measured in one round of a scenario, before its contenders ran. */
export interface FloorComponentsRound {
  round: number;
  components: FloorComponents;
}

export interface ScenarioFloor {
  declared: RequestFloor;
  /** With `rounds`: the median of the rounds' parts. */
  breakdown: FloorBreakdown | null;
  rows: FloorRow[];
  /** The parts measured in each round (absent in older files, whose floor is the run's). */
  rounds?: FloorComponentsRound[];
}

/** One bar of issue 18, judged on this run (report/bars.ts). */
export interface BarResult {
  bar: string;
  /** Null: the run did not measure what the bar needs. */
  met: boolean | null;
  /** The figures it was judged on. */
  figures: string;
}

export interface BenchResults {
  schema: 1;
  startedAt: string;
  finishedAt: string;
  argv: string[];
  machine: MachineInfo;
  settings: BenchSettings;
  scenarios: ScenarioResult[];
  pending: { name: string; reason: string }[];
  sign: SignResults | null;
  /** Set when the run measured client_credentials, with the signature and the bare request (report/throughput_bound.ts). */
  bound?: ThroughputBound | null;
  /** `npm run bench -- scale` (report/scale.ts); absent from runs without it. */
  scale?: ScaleResults | null;
  /** `npm run bench -- soak` (report/soak.ts); absent from runs without it. */
  soak?: SoakResults | null;
  /** The parts of every floor, measured in the run (absent in older files; null: no scenario with a floor ran). */
  floors?: FloorComponents | null;
  /** Issue 33's bars judged on this run (issue 18's in older files; absent in files before them). */
  bars?: BarResult[];
}

/** The one run the repository keeps: the newest full `npm run bench`, copied here by hand. */
export const latestResults = new URL('../results/latest.json', import.meta.url);

/**
 * Where a run writes its files: `--out DIR`, else `$TESSERA_BENCH_RESULTS`, else
 * `tessera-bench/results` in the user's cache (`$XDG_CACHE_HOME`, else `~/.cache`). Never the
 * repository by default: a run's files are the machine's, not the project's, until one is chosen
 * as `bench/results/latest.json`.
 */
export function resultsDirectory(out: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (out !== undefined) return path.resolve(out);
  const chosen = env.TESSERA_BENCH_RESULTS;
  if (chosen !== undefined && chosen !== '') return path.resolve(chosen);
  const cache = env.XDG_CACHE_HOME !== undefined && env.XDG_CACHE_HOME !== '' ? env.XDG_CACHE_HOME : path.join(os.homedir(), '.cache');
  return path.join(cache, 'tessera-bench', 'results');
}

/** `2026-11-22T03-15-07Z`: sortable, and no colons for file systems that mind. */
export function fileStamp(date: Date): string {
  return date
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replaceAll(':', '-');
}

export function writeResults(results: BenchResults, svg: string | null, dir: string): { json: string; svg: string | null } {
  mkdirSync(dir, { recursive: true });
  const stamp = fileStamp(new Date(results.startedAt));
  const json = path.join(dir, `${stamp}.json`);
  writeFileSync(json, `${JSON.stringify(results, null, 2)}\n`);
  let svgFile: string | null = null;
  if (svg !== null) {
    svgFile = path.join(dir, `${stamp}.svg`);
    writeFileSync(svgFile, svg);
  }
  return { json, svg: svgFile };
}
