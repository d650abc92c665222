/**
 * A scenario's background load (`background` in scenarios/scenario.ts): a second load generator
 * process that runs beside each run of a contender, from a second before it until a second after,
 * so that the measured window lies wholly inside it. Its answers are checked as well: a served
 * answer must meet the request's expectation, a shed one the `shed` expectation (a weight-0 kind,
 * never sent, only matched), and anything else voids the measured run. Timeouts and socket errors
 * of the background load are counted and reported, not errors: a full queue may answer that late.
 */
import { errorCount, type LoadGenerator, type LoadKind, type LoadResult } from '../load/load_generator.js';
import type { BackgroundRound } from '../report/results.js';
import type { BackgroundLoad } from '../scenarios/scenario.js';

/** Seconds the background load runs before the run it accompanies starts, and after it ends. */
export const backgroundMarginS = 1;

/** The shed answers' kind: named after the load's own, weight 0 so that it is never sent. */
export function shedKindName(load: BackgroundLoad): string {
  return `${load.kind}_shed`;
}

/** The load generator's kinds for a background load: its request, then its shed answer. */
export function backgroundKinds(load: BackgroundLoad): LoadKind[] {
  return [
    { name: load.kind, weight: 1, request: load.plan.request, expect: load.plan.expect },
    { name: shedKindName(load), weight: 0, request: load.plan.request, expect: load.shed },
  ];
}

/** What a background run did, and whether it voids the run it accompanied. */
export function backgroundRound(load: BackgroundLoad, result: LoadResult, loadgenCores: number | null): BackgroundRound {
  const count = (name: string) => result.kinds.find((kind) => kind.name === name);
  const served = count(load.kind);
  const answered = served?.matched ?? 0;
  const shed = count(shedKindName(load))?.matched ?? 0;
  const unexpected = result.non2xx + result.unexpected;
  const problems: string[] = [];
  if (answered + shed === 0) problems.push(`the ${load.name} got no answer it expects`);
  if (unexpected > 0) {
    problems.push(
      `the ${load.name} got ${unexpected} answers that were neither served (${load.plan.expect.status}) nor shed (${load.shed.status})` +
        (result.badSample === null ? '' : ` (first: ${result.badSample})`),
    );
  }
  // Every request written is answered, as served, shed or otherwise, but those in flight at the
  // end (one per connection) and wrk's start-up check request.
  const sent = served?.sent ?? null;
  const unanswered = sent === null ? null : Math.max(0, sent - answered - shed - unexpected);
  if (unanswered !== null && unanswered > load.connections + 1) {
    problems.push(`the ${load.name} sent ${sent} requests but got ${answered + shed + unexpected} answers`);
  }
  return {
    name: load.name,
    connections: load.connections,
    durationS: result.durationS,
    requests: result.requests,
    answered,
    shed,
    unexpected,
    unanswered,
    timeouts: result.errors.timeout,
    socketErrors: errorCount(result) - result.errors.timeout,
    latencyMs: result.latencyMs,
    loadgenCores,
    problem: problems.length === 0 ? null : problems.join('; '),
  };
}

/** A background load under way. */
export interface BackgroundRun {
  readonly pid: number;
  /** Its figures, once its load generator ends (a second after the run it accompanies). */
  readonly done: Promise<LoadResult>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts the background load for a run of `durationS` seconds and resolves once it has run for
 * {@link backgroundMarginS}: start the accompanied run then.
 */
export async function startBackground(
  generator: LoadGenerator,
  load: BackgroundLoad,
  options: { baseUrl: string; workDir: string; durationS: number },
): Promise<BackgroundRun> {
  const run = generator.start({
    baseUrl: options.baseUrl,
    workDir: options.workDir,
    kinds: backgroundKinds(load),
    connections: load.connections,
    durationS: options.durationS + 2 * backgroundMarginS,
  });
  // Awaited after the accompanied run; until then a failure must not be an unhandled rejection.
  run.done.catch(() => undefined);
  await run.started;
  await sleep(backgroundMarginS * 1000);
  return { pid: run.pid, done: run.done };
}
