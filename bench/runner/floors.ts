/**
 * The parts of every floor (scenarios/floor.ts): signatures and verifications in this process, the
 * store commands as bare ioredis loops against the bench's redis-server, the argon2id verify the
 * password floor excludes, and the bare uWS request from the ceiling endpoint with the run's load
 * generator. Measured once per run before the scenarios (the table of floors, the bound, the
 * password's hash; the bare request from the `ceiling` scenario itself when the run has it, else
 * from a run of it for the floors alone), and again in each round of every scenario with a floor,
 * which its rows are judged against ({@link runScenarioWithFloor}).
 */
import { scenarioFloor } from '../report/floors.js';
import type {
  ContenderBridge,
  ContenderHandoff,
  CryptoCost,
  FloorComponents,
  FloorComponentsRound,
  RoundResult,
  ScenarioResult,
  StoreCommandCost,
} from '../report/results.js';
import { ceiling } from '../scenarios/ceiling.js';
import { storeCommandName, type StoreCommand } from '../scenarios/floor.js';
import type { ActiveScenario } from '../scenarios/scenario.js';
import { measureHashCost } from '../support/argon2_cost.js';
import { cheapHashUser } from '../support/bench_config.js';
import { measureCryptoCost } from '../support/crypto_cost.js';
import type { BenchAlgorithm } from '../support/keys.js';
import { measureStoreCommand } from '../support/store_command_cost.js';
import { measureBridgeCommands } from '../support/bridge_cost.js';
import { measureHandoff } from '../support/handoff_cost.js';
import type { Contender } from './contenders.js';
import type { RunContext } from './context.js';
import { runScenario } from './run_scenario.js';

/** Verifies the password lane runs at once by default (`workers.passwordConcurrency`, docs/operations.md "Lanes"). */
const passwordLaneConcurrency = 4;

export interface FloorsRun {
  components: FloorComponents;
  /** The ceiling scenario's result, measured for the floors (the run's own `ceiling` when it has one). */
  ceiling: ScenarioResult | null;
}

/** The algorithms the floors sign or verify with; ES256 always, for the bound's signature. */
function algorithmsOf(scenarios: readonly ActiveScenario[]): BenchAlgorithm[] {
  const algs = new Set<BenchAlgorithm>(['ES256']);
  for (const floor of scenarios.map((s) => s.floor)) {
    for (const alg of Object.keys({ ...floor?.signatures, ...floor?.verifications }) as BenchAlgorithm[]) algs.add(alg);
  }
  return [...algs];
}

/** Each distinct command of the floors of scenarios that run on Redis in this run. */
function storeCommandsOf(scenarios: readonly ActiveScenario[], ctx: RunContext): StoreCommand[] {
  const wanted = ctx.options.stores;
  if (wanted !== undefined && !wanted.includes('redis')) return [];
  const commands = new Map<string, StoreCommand>();
  for (const scenario of scenarios) {
    if (!scenario.stores.includes('redis')) continue;
    for (const { command } of scenario.floor?.store ?? []) commands.set(storeCommandName(command), command);
  }
  return [...commands.values()];
}

/** The parts the run's floors and each round measure alike. */
interface MeasuredParts {
  crypto: CryptoCost[];
  store: StoreCommandCost[];
  /** One verify of the cheap-hash user; null when no scenario here excludes it. */
  cheapHashUs: number | null;
}

/**
 * The signatures and verifications of `scenarios`' floors, their store commands when a Redis row
 * runs, and the cheap-hash user's verify when one excludes it: about 0.28 ms, measured over 1,000
 * verifies as the password lane runs them (unlike the 14 ms hash, a difference this small leaves
 * the rest of the request measurable: bench/README.md, "Bars"). `where` heads the progress lines.
 */
async function measureParts(
  scenarios: readonly ActiveScenario[],
  ctx: RunContext,
  where: string,
  options: { warmUpRedis?: boolean } = {},
): Promise<MeasuredParts> {
  const { progress } = ctx;
  const crypto: CryptoCost[] = [];
  for (const alg of algorithmsOf(scenarios)) {
    progress.phase(`${where} · ${alg}: a JWT signed, a signature, a verification`);
    crypto.push(measureCryptoCost(alg));
  }
  let cheapHashUs: number | null = null;
  if (scenarios.some((s) => s.floor?.excludes === 'argon2id-verify-cheap')) {
    progress.phase(`${where} · argon2id verifies of the cheap hash, ${passwordLaneConcurrency} at a time`);
    cheapHashUs = (await measureHashCost(1_000, passwordLaneConcurrency, cheapHashUser)).cpuMs * 1000;
  }
  const store: StoreCommandCost[] = [];
  const commands = storeCommandsOf(scenarios, ctx);
  if (commands.length > 0) {
    const redis = await ctx.ensureRedis();
    if (options.warmUpRedis === true) {
      // The process's first loop also compiles ioredis's paths: measured once more, that one is thrown away.
      progress.phase(`${where} · warming ioredis up`);
      await measureStoreCommand(redis.url, redis.pid, commands[0] as StoreCommand, { seconds: 0.5 });
    }
    for (const command of commands) {
      progress.phase(`${where} · ${storeCommandName(command)}, a bare ioredis loop`);
      store.push(await measureStoreCommand(redis.url, redis.pid, command));
    }
  }
  return { crypto, store, cheapHashUs };
}

/** Null when no scenario of the run declares a floor. */
export async function measureFloors(active: readonly ActiveScenario[], ctx: RunContext): Promise<FloorsRun | null> {
  const floored = active.filter((s) => s.floor !== undefined);
  if (floored.length === 0) return null;
  const { progress } = ctx;
  let hashUs: number | null = null;
  if (floored.some((s) => s.floor?.excludes === 'argon2id-verify')) {
    progress.phase(`floors · argon2id verifies, ${passwordLaneConcurrency} at a time`);
    hashUs = (await measureHashCost(40, passwordLaneConcurrency)).cpuMs * 1000;
  }
  const { crypto, store, cheapHashUs } = await measureParts(floored, ctx, 'floors', { warmUpRedis: true });
  const result = await runScenario(ceiling, ctx);
  const summary = result?.contenders[0]?.summary ?? null;
  progress.clear();
  const http =
    summary?.serverUsPerRequest == null
      ? null
      : {
          usPerRequest: summary.serverUsPerRequest,
          rps: summary.rps,
          source: active.includes(ceiling) ? ('ceiling' as const) : ('floors' as const),
        };
  return { components: { crypto, http, store, hashUs, cheapHashUs }, ceiling: result };
}

/**
 * Runs one scenario (the ceiling's result is the one the floors measured) and sets its rows against
 * its floor. A scenario with a floor measures it again in every round, before its contenders: the
 * signatures and verifications, its store commands on Redis, and the bare uWS request as one more
 * contender of the round (runner/contenders.ts). Each row is then judged round by round
 * (report/floors.ts, `floorRowsByRound`): a VM that drifts during the run moves a round's floor
 * and its figures alike. The run's own floors (measured once, before the scenarios) stay for the
 * table of floors, the bound, and the password's hash.
 */
export async function runScenarioWithFloor(
  scenario: ActiveScenario,
  ctx: RunContext,
  floors: FloorsRun | null,
): Promise<ScenarioResult | null> {
  if (scenario === ceiling && floors?.ceiling != null) return floors.ceiling;
  const declared = scenario.floor;
  const measuredRounds: (MeasuredParts & { round: number })[] = [];
  const beforeRound =
    declared === undefined
      ? undefined
      : async (round: number): Promise<void> => {
          measuredRounds.push({ round, ...(await measureParts([scenario], ctx, `${scenario.name} · round ${round} · floor`)) });
        };
  const afterRound =
    declared === undefined
      ? undefined
      : async (round: number, measured: readonly { contender: Contender; result: RoundResult }[]): Promise<void> => {
          afterParts.set(round, await measureHandoffs(scenario, ctx, round, measured));
        };
  const afterParts = new Map<number, { handoff: ContenderHandoff[]; bridge: ContenderBridge[] }>();
  const result = await runScenario(scenario, ctx, beforeRound, afterRound);
  if (result === null) return null;
  const bare = result.contenders.find((c) => c.kind === 'ceiling');
  const rounds: FloorComponentsRound[] = [];
  for (const measured of measuredRounds) {
    const run = bare?.rounds.find((r) => r.round === measured.round);
    const usPerRequest = run?.valid === true ? run.cpu.serverUsPerRequest : null;
    rounds.push({
      round: measured.round,
      components: {
        crypto: measured.crypto,
        http: usPerRequest == null ? null : { usPerRequest, rps: run!.load.rps, source: 'round' },
        store: measured.store,
        // The excluded hash stays the run's: measured in each round (40 verifies, 4 at a time) it
        // read 11.8 ms against the run's 14.2 and left 1.9 ms a request "above" a 39 µs floor
        // (bench/README.md, "Bars"): a 14 ms cost measured apart cannot be taken off to 0.3%.
        hashUs: floors?.components.hashUs ?? null,
        cheapHashUs: measured.cheapHashUs,
        handoff: afterParts.get(measured.round)?.handoff ?? [],
        bridge: afterParts.get(measured.round)?.bridge ?? [],
      },
    });
  }
  const floor = scenarioFloor(declared, result.contenders, floors?.components, rounds);
  return floor === null ? result : { ...result, floor };
}

/**
 * The new floor's parts of one round (issue 33), measured after its contenders at the batch size
 * each gateway reported in that round (`tessera_worker_batch_size`): one bare batch hand-off
 * through a pool like the gateway's (support/handoff_cost.ts), and for a memory-store row whose
 * request sends store commands, those commands through the bridge (support/bridge_cost.ts). A
 * row without a batch figure (a checkout that does not publish it, an invalid round) gets none.
 */
async function measureHandoffs(
  scenario: ActiveScenario,
  ctx: RunContext,
  round: number,
  measured: readonly { contender: Contender; result: RoundResult }[],
): Promise<{ handoff: ContenderHandoff[]; bridge: ContenderBridge[] }> {
  const handoff: ContenderHandoff[] = [];
  const bridge: ContenderBridge[] = [];
  const commands = new Map<string, StoreCommand>();
  for (const { command } of scenario.floor?.store ?? []) commands.set(storeCommandName(command), command);
  for (const { contender, result } of measured) {
    const gateway = contender.kind === 'tessera' || contender.kind === 'baseline';
    if (!gateway || contender.background !== null || contender.processes !== 1 || !result.valid || result.batch == null) continue;
    const where = `${scenario.name} · round ${round} · floor · ${contender.label}`;
    ctx.progress.phase(`${where} · bare hand-off of ${result.batch.toFixed(1)} requests a batch`);
    handoff.push({ contender: contender.id, ...(await measureHandoff(ctx.options.threads, result.batch)) });
    if (contender.store === 'memory' && commands.size > 0) {
      ctx.progress.phase(`${where} · its store commands through the bridge`);
      bridge.push({ contender: contender.id, commands: await measureBridgeCommands([...commands.values()], result.batch) });
    }
  }
  return { handoff, bridge };
}

/** One line per part measured, for the console. */
export function formatFloorComponents(components: FloorComponents): string[] {
  const us = (value: number): string => value.toFixed(1);
  return [
    ...components.crypto.map(
      (c) =>
        `${c.alg}: a full JWT signed ${us(c.jwtSignUs)} µs, the signature alone ${us(c.signUs)} µs, a verification ${us(c.verifyUs)} µs`,
    ),
    components.http === null
      ? 'bare uWS POST: not measured (the ceiling run failed)'
      : `bare uWS POST: ${us(components.http.usPerRequest)} µs of server CPU at ${Math.round(components.http.rps).toLocaleString('en-US')} req/s (${components.http.source === 'ceiling' ? 'the ceiling scenario' : 'the ceiling endpoint, measured for the floors'})`,
    ...components.store.map(
      (c) =>
        `${c.name}: ${us(c.clientUs)} µs ioredis + ${c.redisUs === null ? '?' : us(c.redisUs)} µs redis-server per command (${c.commands.toLocaleString('en-US')} commands, ${c.inFlight} in flight)`,
    ),
    ...(components.hashUs === null
      ? []
      : [
          `argon2id verify: ${Math.round(components.hashUs).toLocaleString('en-US')} µs of CPU, ${passwordLaneConcurrency} at a time as the password lane runs them`,
        ]),
    ...(components.cheapHashUs == null
      ? []
      : [
          `argon2id verify of the cheap hash: ${us(components.cheapHashUs)} µs of CPU, ${passwordLaneConcurrency} at a time (again in each round of password_cheap_hash)`,
        ]),
  ];
}
