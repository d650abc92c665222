import { invalidReason, type LoadOptions, type LoadResult } from '../load/load_generator.js';
import type { RoundResult, ThreadFigures } from '../report/results.js';
import { CpuWindow, type CpuFigure } from '../support/cpu_window.js';
import { processMemory, type ProcessMemory } from '../support/proc_stats.js';
import { rssTrend, type RssSample } from '../support/rss_trend.js';
import { threadCpuSeconds, type ThreadSplit } from '../support/thread_cpu.js';
import { meanBatch, readBatchCounter } from '../support/metrics.js';
import { backgroundRound, startBackground, type BackgroundRun } from './background.js';
import { profileFolder, type Contender, type StartedContender } from './contenders.js';
import type { RunContext } from './context.js';
import type { RunLoad, Workload } from './workload.js';

const sampleEveryMs = 250;
/** The server's RSS is read every fourth CPU sample: once a second. */
const rssEverySamples = 4;

function percent(figure: CpuFigure | null): string {
  return figure === null ? '–' : `${Math.round(figure.cores * 100)}%`;
}

function usPerRequest(figure: CpuFigure | null, load: LoadResult): number | null {
  return figure === null || load.rps <= 0 ? null : (figure.cores * 1e6) / load.rps;
}

function joinReasons(...reasons: (string | null)[]): string | null {
  const given = reasons.filter((reason) => reason !== null);
  return given.length === 0 ? null : given.join('; ');
}

/** What a contender carries from round to round. */
export interface ContenderProgress {
  /** req/s of its last valid measured run, to size the next supplies. */
  lastRps: number | null;
}

/** Runs the load once with `feed`, and gives the feed back whatever happens. */
async function runWith(feed: RunLoad, start: (kinds: LoadOptions['kinds']) => Promise<LoadResult>): Promise<LoadResult> {
  let result: LoadResult | null = null;
  try {
    result = await start(feed.kinds);
    return result;
  } finally {
    feed.finish(result);
  }
}

/**
 * One round of one contender: a warm-up run, then the measured run with the CPU time of the
 * server, its store and the load generator sampled over the same window. Requests that consume
 * items (refresh tokens, codes) get them made before each run, sized from the rate so far.
 */
export async function measureRound(
  ctx: RunContext,
  scenario: string,
  contender: Contender,
  started: StartedContender,
  workload: Workload,
  state: ContenderProgress,
  round: number,
  rounds: number,
): Promise<RoundResult> {
  const { generator, options, progress } = ctx;
  const base = `${scenario} · ${contender.label} · round ${round}/${rounds}`;
  const load: Omit<LoadOptions, 'durationS' | 'kinds'> = {
    baseUrl: started.server.url,
    connections: options.connections,
    workDir: ctx.tmp,
  };

  const background = contender.background;
  const under = background === null ? '' : ` under the ${background.name}`;
  /** The background load for a run of `durationS`, started a second ahead of it. */
  const startLoad = async (durationS: number): Promise<BackgroundRun | null> => {
    if (background === null) return null;
    progress.phase(`${base} · starting the ${background.name} (${background.connections} connections)`);
    return startBackground(generator, background, { baseUrl: started.server.url, workDir: ctx.tmp, durationS });
  };

  const warmRate = state.lastRps ?? contender.expectedRps;
  if (workload.consumes) progress.phase(`${base} · preparing the warm-up's requests`);
  const warmFeed = await workload.forRun(options.warmupS, warmRate);
  const warmLoad = await startLoad(options.warmupS);
  progress.phase(`${base} · warm-up ${options.warmupS} s${under}`);
  const warm = await runWith(warmFeed, (kinds) => generator.start({ ...load, kinds, durationS: options.warmupS }).done);
  const warmBackground = background === null || warmLoad === null ? null : backgroundRound(background, await warmLoad.done, null);

  // Items for the measured run. A first warm-up often runs below what the same process reaches
  // once warm, so until a run was measured the scenario's guess is a floor; a warm-up that ran
  // out of items reports too low a rate (wrk divides by the whole duration).
  const rate =
    warm.exhausted !== null
      ? Math.max(warmRate, warm.rps) * 2
      : state.lastRps === null
        ? Math.max(warm.rps * 1.3, contender.expectedRps)
        : Math.max(warm.rps, state.lastRps) * 1.15;
  if (workload.consumes) progress.phase(`${base} · preparing the measured run's requests`);
  const preparing = performance.now();
  const feed = await workload.forRun(options.durationS, rate);
  const made =
    feed.made > 0
      ? ` (${feed.made.toLocaleString('en-US')} single-use items made in ${((performance.now() - preparing) / 1000).toFixed(1)} s)`
      : '';
  // Both checkouts are Tessera and publish the counter.
  const gateway = contender.kind === 'tessera' || contender.kind === 'baseline';
  const batchBefore = gateway ? await readBatchCounter(metricsUrlOf(started.server)) : null;

  const measuredLoad = await startLoad(options.durationS);
  progress.phase(`${base} · measuring ${options.durationS} s${made}${under}`);
  const run = generator.start({ ...load, kinds: feed.kinds, durationS: options.durationS });
  const pids = new Map<string, number | readonly number[]>([
    ['server', serverPids(started.server)],
    ['loadgen', run.pid],
  ]);
  if (started.storePid !== null) pids.set('store', started.storePid);
  // Its CPU is its own figure, not "other processes".
  if (measuredLoad !== null) pids.set('background', measuredLoad.pid);
  pids.set('runner', process.pid);
  const window = new CpuWindow(pids);
  await run.started;
  window.sample();
  const threadsAt = gateway ? summedThreads(serverPids(started.server)) : null;
  const startedAt = performance.now();
  const startUs = Number(process.hrtime.bigint() / 1000n);
  const rss: RssSample[] = [];
  const sampleRss = (): void => {
    const memory = summedMemory(serverPids(started.server));
    if (memory !== null) rss.push({ atS: (performance.now() - startedAt) / 1000, bytes: memory.rssBytes });
  };
  sampleRss();
  let ticks = 0;
  const timer = setInterval(() => {
    window.sample();
    if (++ticks % rssEverySamples === 0) sampleRss();
    const steal = window.stealFraction();
    const others = window.otherCores();
    progress.update(
      `${((performance.now() - startedAt) / 1000).toFixed(0)}/${options.durationS} s · server ${percent(window.figure('server'))} CPU · ` +
        `load generator ${percent(window.figure('loadgen'))}` +
        `${others === null ? '' : ` · other processes ${Math.round(others * 100)}%`}${steal === null ? '' : ` · steal ${Math.round(steal * 100)}%`}`,
    );
  }, sampleEveryMs);
  let result: LoadResult;
  try {
    result = await runWith(feed, () => run.done);
  } finally {
    clearInterval(timer);
  }
  window.sample();
  const threads = threadFigures(threadsAt, gateway ? summedThreads(serverPids(started.server)) : null, result);
  sampleRss();
  const backgroundFigures =
    background === null || measuredLoad === null
      ? null
      : backgroundRound(background, await measuredLoad.done, window.figure('background')?.cores ?? null);
  const batch = gateway ? meanBatch(batchBefore, await readBatchCounter(metricsUrlOf(started.server))) : null;
  if (ctx.profileDir !== null) {
    const folder = profileFolder(scenario, contender.id);
    const windows = ctx.profileWindows.get(folder) ?? [];
    windows.push({ startUs, endUs: Number(process.hrtime.bigint() / 1000n) });
    ctx.profileWindows.set(folder, windows);
  }

  const server = window.figure('server');
  const store = window.figure('store');
  const steal = window.stealFraction();
  const reason = joinReasons(invalidReason(result, options.connections), backgroundFigures?.problem ?? null);
  if (reason === null) state.lastRps = result.rps;
  return {
    round,
    load: result,
    valid: reason === null,
    invalidReason: reason,
    cpu: {
      serverCores: server?.cores ?? null,
      serverUsPerRequest: usPerRequest(server, result),
      storeCores: store?.cores ?? null,
      storeUsPerRequest: usPerRequest(store, result),
      loadgenCores: window.figure('loadgen')?.cores ?? null,
      otherCores: window.otherCores(),
    },
    stealPercent: steal === null ? null : steal * 100,
    // A warm-up that ran out of items only stopped early: not a fault of the server.
    warmup: {
      rps: warm.rps,
      invalidReason: joinReasons(invalidReason({ ...warm, exhausted: null }, options.connections), warmBackground?.problem ?? null),
    },
    batch,
    threads,
    rss: rssTrend(rss),
    itemsMade: workload.consumes ? feed.made : null,
    ...(backgroundFigures === null ? {} : { background: backgroundFigures }),
  };
}

/** Where a gateway serves /metrics: its management listener, or its public port (older checkouts). */
function metricsUrlOf(server: { readonly url: string; readonly detail: Record<string, unknown> }): string {
  const metricsUrl = server.detail.metricsUrl;
  return typeof metricsUrl === 'string' ? metricsUrl : `${server.url}/metrics`;
}

/** Every process of a server: a gateway of several processes names them all in its `pids`. */
export function serverPids(server: { readonly pid: number; readonly detail: Record<string, unknown> }): readonly number[] {
  const pids = server.detail.pids;
  return Array.isArray(pids) && pids.length > 0 && pids.every((pid) => typeof pid === 'number') ? (pids as number[]) : [server.pid];
}

/** The thread split of a server's processes added up (null when one cannot be read). */
function summedThreads(pids: readonly number[]): ThreadSplit | null {
  return summedOver(pids, threadCpuSeconds, { main: 0, others: 0 });
}

/** CPU per request on the main threads and the others between two splits. */
export function threadFigures(before: ThreadSplit | null, after: ThreadSplit | null, load: { requests: number }): ThreadFigures | null {
  if (before === null || after === null || load.requests <= 0) return null;
  return {
    mainUsPerRequest: ((after.main - before.main) * 1e6) / load.requests,
    othersUsPerRequest: ((after.others - before.others) * 1e6) / load.requests,
  };
}

/** The memory of a server's processes added up (null when one cannot be read). */
export function serverMemory(server: { readonly pid: number; readonly detail: Record<string, unknown> }): ProcessMemory | null {
  return summedMemory(serverPids(server));
}

function summedMemory(pids: readonly number[]): ProcessMemory | null {
  return summedOver(pids, processMemory, { rssBytes: 0, peakRssBytes: 0 });
}

/** Each figure of `read` added up over the processes; null when one of them cannot be read. */
function summedOver<T extends Record<string, number>>(pids: readonly number[], read: (pid: number) => T | null, zero: T): T | null {
  const sum: Record<string, number> = { ...zero };
  for (const pid of pids) {
    const figures = read(pid);
    if (figures === null) return null;
    for (const key of Object.keys(zero)) sum[key] = (sum[key] ?? 0) + (figures[key] ?? 0);
  }
  return sum as T;
}
