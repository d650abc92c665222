import { baselineComparisons } from '../report/baseline.js';
import { underLoadComparisons } from '../report/under_load.js';
import type { ContenderResult, RatioResult, RoundResult, ScenarioResult, Summary } from '../report/results.js';
import { meets } from '../load/load_generator.js';
import { sendOnce } from '../scenarios/requests.js';
import type { ActiveScenario, BackgroundLoad } from '../scenarios/scenario.js';
import { processScalingComparisons } from '../report/process_scaling.js';
import { formatSeenCommands, seeStoreCommands } from '../support/store_monitor.js';
import { tokenSignatureProblem, type KeySet } from '../support/token_signatures.js';
import { contendersOf, type Contender, type StartedContender } from './contenders.js';
import type { RunContext } from './context.js';
import { measureRound, serverMemory, type ContenderProgress } from './measure.js';
import { median, medianOrNull } from '../support/stats.js';
import { Workload } from './workload.js';

interface ContenderState {
  contender: Contender;
  started: StartedContender | null;
  workload: Workload | null;
  progress: ContenderProgress;
  result: ContenderResult;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function describeError(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * One request of each kind checked in depth: before the load (a misconfigured server must not
 * produce figures) and after each round (nor must one that hung). Here, unlike under load, the
 * signatures of the tokens are verified too, against the keys the server publishes.
 */
async function checkRequests(
  workload: Workload,
  url: string,
  keys: KeySet | null,
  when: string,
  around: (send: () => Promise<void>) => Promise<void> = (send) => send(),
): Promise<void> {
  // Items are made (seeded) before the requests, so that `around` sees the requests alone.
  const checks = await workload.checks();
  await around(() => checkEach(checks, workload, url, keys, when));
}

async function checkEach(
  checks: Awaited<ReturnType<Workload['checks']>>,
  workload: Workload,
  url: string,
  keys: KeySet | null,
  when: string,
): Promise<void> {
  for (const { kind, request } of checks) {
    const label = workload.kinds.length > 1 ? `${when}, ${kind.name}` : when;
    let response: Response;
    try {
      response = await sendOnce(url, request, 5000);
    } catch (err) {
      throw new Error(`${label}: no answer within 5 s (${describeError(err)})`);
    }
    const body = await response.text();
    const problem = kind.verify(response.status, body) ?? (keys === null ? null : await tokenSignatureProblem(body, keys));
    if (problem !== null) throw new Error(`${label}: ${problem}`);
    if (!meets(kind.expect, response.status, body)) {
      throw new Error(
        `${label}: the response does not meet the load check (status ${kind.expect.status}, body starting ${kind.expect.bodyPrefix})`,
      );
    }
  }
}

/** The background load's request checked in depth once, before the runs it accompanies. */
async function checkBackground(load: BackgroundLoad, url: string, keys: KeySet | null): Promise<void> {
  const label = `preflight, ${load.name}`;
  let response: Response;
  try {
    response = await sendOnce(url, load.plan.request, 5000);
  } catch (err) {
    throw new Error(`${label}: no answer within 5 s (${describeError(err)})`);
  }
  const body = await response.text();
  const problem = load.plan.verify(response.status, body) ?? (keys === null ? null : await tokenSignatureProblem(body, keys));
  if (problem !== null) throw new Error(`${label}: ${problem}`);
  if (!meets(load.plan.expect, response.status, body)) throw new Error(`${label}: the response does not meet the load check`);
}

export function summarise(rounds: readonly RoundResult[]): Summary | null {
  const valid = rounds.filter((round) => round.valid);
  if (valid.length === 0) return null;
  const pick = (f: (round: RoundResult) => number | null): number | null => medianOrNull(valid.map(f));
  return {
    validRounds: valid.length,
    rps: median(valid.map((r) => r.load.rps)),
    latencyMs: {
      p50: median(valid.map((r) => r.load.latencyMs.p50)),
      p90: median(valid.map((r) => r.load.latencyMs.p90)),
      p99: median(valid.map((r) => r.load.latencyMs.p99)),
      max: median(valid.map((r) => r.load.latencyMs.max)),
      mean: median(valid.map((r) => r.load.latencyMs.mean)),
    },
    serverCores: pick((r) => r.cpu.serverCores),
    serverUsPerRequest: pick((r) => r.cpu.serverUsPerRequest),
    storeUsPerRequest: pick((r) => r.cpu.storeUsPerRequest),
    loadgenCores: pick((r) => r.cpu.loadgenCores),
    otherCores: pick((r) => r.cpu.otherCores),
    stealPercent: pick((r) => r.stealPercent),
  };
}

function ratiosOf(contenders: readonly ContenderResult[]): RatioResult[] {
  const ratios: RatioResult[] = [];
  // A server under a background load is compared with itself alone (report/under_load.ts), not with a peer.
  for (const tessera of contenders.filter((c) => c.kind === 'tessera' && c.background === undefined)) {
    for (const peer of contenders.filter((c) => c.kind === 'peer')) {
      if (tessera.summary === null || peer.summary === null) continue;
      const perRound: number[] = [];
      for (const t of tessera.rounds) {
        const p = peer.rounds.find((r) => r.round === t.round);
        if (t.valid && p?.valid === true && p.load.rps > 0) perRound.push(t.load.rps / p.load.rps);
      }
      ratios.push({
        tessera: tessera.id,
        peer: peer.id,
        rps: tessera.summary.rps / peer.summary.rps,
        perRound,
        tesseraUsPerRequest: tessera.summary.serverUsPerRequest,
        peerUsPerRequest: peer.summary.serverUsPerRequest,
      });
    }
  }
  return ratios;
}

/**
 * Starts every contender of the scenario, checks each with one real request, then runs the rounds
 * interleaved (A, B, C, A, B, C) so that all of them see the same machine, and stops them.
 */
export async function runScenario(
  scenario: ActiveScenario,
  ctx: RunContext,
  /** Runs at the start of each round, before its contenders (the floor's parts, runner/floors.ts). */
  beforeRound?: (round: number) => Promise<void>,
  /** Runs at the end of each round with what its contenders measured (the hand-off at their batch sizes). */
  afterRound?: (round: number, measured: readonly { contender: Contender; result: RoundResult }[]) => Promise<void>,
): Promise<ScenarioResult | null> {
  const { progress } = ctx;
  const contenders = contendersOf(scenario, ctx);
  if (contenders.length === 0) {
    progress.log(`${scenario.name}: skipped, no contender left after --store`);
    return null;
  }
  const rounds = ctx.options.rounds ?? (contenders.length > 1 ? 2 : 1);
  let notes: string[] = [];
  if (scenario.notes !== undefined) {
    progress.phase(`${scenario.name} · measuring what goes beside the table`);
    notes = await scenario.notes();
  }
  const states: ContenderState[] = contenders.map((contender) => ({
    contender,
    started: null,
    workload: null,
    progress: { lastRps: null },
    result: {
      id: contender.id,
      label: contender.label,
      kind: contender.kind,
      store: contender.store,
      detail: {},
      kinds: [],
      rounds: [],
      summary: null,
      memory: { idleRssBytes: null, afterRssBytes: null, peakRssBytes: null },
      error: null,
      ...(contender.background === null ? {} : { background: contender.background.name }),
      ...(contender.alone === null ? {} : { alone: contender.alone }),
      ...(contender.processes === 1 ? {} : { processes: contender.processes }),
      ...(contender.oneProcess === null ? {} : { oneProcess: contender.oneProcess }),
      ...(contender.events === null ? {} : { events: contender.events }),
      ...(contender.eventsOff === null ? {} : { eventsOff: contender.eventsOff }),
    },
  }));

  const fail = (state: ContenderState, err: unknown): void => {
    const output = state.started?.server.output() ?? '';
    state.result.error =
      describeError(err) +
      (output === '' ? '' : `\n--- ${state.contender.id} output (tail) ---\n${output.split('\n').slice(-20).join('\n')}`);
  };

  try {
    for (const state of states) {
      progress.phase(`${scenario.name} · starting ${state.contender.label}`);
      try {
        state.started = await state.contender.start();
        state.result.detail = state.started.server.detail;
        await sleep(500);
        state.result.memory.idleRssBytes = serverMemory(state.started.server)?.rssBytes ?? null;
        progress.phase(`${scenario.name} · preparing ${state.contender.label}`);
        const kinds = await state.contender.requestKinds(state.started.access);
        state.result.kinds = kinds.map((kind) => ({
          name: kind.name,
          weight: kind.weight,
          supply: kind.supply?.mode ?? null,
          method: kind.request.method,
          path: kind.request.path,
        }));
        state.workload = await Workload.prepare(kinds, state.started.access, {
          dir: ctx.tmp,
          label: `${scenario.name}-${state.contender.id}`,
          connections: ctx.options.connections,
        });
        // One request of a single-kind scenario on Redis: are its store commands the ones its floor declares?
        const floor = scenario.floor;
        const watched =
          floor !== undefined &&
          kinds.length === 1 &&
          state.contender.kind === 'tessera' &&
          state.contender.store === 'redis' &&
          state.contender.background === null &&
          state.contender.events === null &&
          state.contender.processes === 1;
        await checkRequests(state.workload, state.started.server.url, state.started.keys, 'preflight', async (send) => {
          if (!watched) return send();
          const seen = await seeStoreCommands((await ctx.ensureRedis()).url, send);
          notes.push(formatSeenCommands(floor, seen));
        });
        if (state.contender.background !== null)
          await checkBackground(state.contender.background, state.started.server.url, state.started.keys);
      } catch (err) {
        fail(state, err);
      }
    }

    for (let round = 1; round <= rounds; round++) {
      await beforeRound?.(round);
      const measuredInRound: { contender: Contender; result: RoundResult }[] = [];
      for (const state of states) {
        const started = state.started;
        const workload = state.workload;
        if (started === null || workload === null || state.result.error !== null) continue;
        let measured;
        try {
          measured = await measureRound(ctx, scenario.name, state.contender, started, workload, state.progress, round, rounds);
          state.result.rounds.push(measured);
          measuredInRound.push({ contender: state.contender, result: measured });
        } catch (err) {
          fail(state, err);
          continue;
        }
        // A server that wedged during the run may have answered correctly every request it did
        // finish: only a request after the run tells.
        try {
          await checkRequests(workload, started.server.url, started.keys, `after round ${round}`);
        } catch (err) {
          measured.valid = false;
          measured.invalidReason = [measured.invalidReason, `the server stopped answering (${describeError(err)})`]
            .filter(Boolean)
            .join('; ');
          fail(state, new Error('not measured further: it stopped answering'));
          continue;
        }
        if (!started.server.alive()) fail(state, new Error(`${state.contender.id} exited during round ${round}`));
      }
      await afterRound?.(round, measuredInRound);
    }

    for (const state of states) {
      if (state.started === null || !state.started.server.alive()) continue;
      const memory = serverMemory(state.started.server);
      state.result.memory.afterRssBytes = memory?.rssBytes ?? null;
      state.result.memory.peakRssBytes = memory?.peakRssBytes ?? null;
    }
  } finally {
    progress.phase(`${scenario.name} · stopping`);
    for (const state of states) state.workload?.close();
    await Promise.all(states.map((state) => state.started?.server.stop()));
    progress.clear();
  }

  const results = states.map((state) => ({ ...state.result, summary: summarise(state.result.rounds) }));
  return {
    name: scenario.name,
    measures: scenario.measures,
    contenders: results,
    ratios: ratiosOf(results),
    // Only with --baseline-root, so that other results files stay as they were.
    ...(ctx.baseline === null ? {} : { baselines: baselineComparisons(results) }),
    // Only for a scenario with a background load, likewise.
    ...(scenario.background === undefined ? {} : { underLoad: underLoadComparisons(results) }),
    // Only with --processes counts to compare, likewise.
    ...(ctx.options.processes.length > 1 ? { scaling: processScalingComparisons(results) } : {}),
    notes,
    hasErrors: results.some((c) => c.error !== null || c.rounds.some((r) => !r.valid) || c.summary === null),
  };
}
