import { invalidReason, type LoadOptions, type LoadResult } from '../load/load_generator.js';
import type { RoundResult } from '../report/results.js';
import { CpuWindow, type CpuFigure } from '../support/cpu_window.js';
import { profileFolder, type Contender, type StartedContender } from './contenders.js';
import type { RunContext } from './context.js';

const sampleEveryMs = 250;

function percent(figure: CpuFigure | null): string {
  return figure === null ? '–' : `${Math.round(figure.cores * 100)}%`;
}

function usPerRequest(figure: CpuFigure | null, load: LoadResult): number | null {
  return figure === null || load.rps <= 0 ? null : (figure.cores * 1e6) / load.rps;
}

/**
 * One round of one contender: a warm-up run, then the measured run with the CPU time of the
 * server, its store and the load generator sampled over the same window.
 */
export async function measureRound(
  ctx: RunContext,
  scenario: string,
  contender: Contender,
  started: StartedContender,
  round: number,
  rounds: number,
): Promise<RoundResult> {
  const { generator, options, progress } = ctx;
  const base = `${scenario} · ${contender.label} · round ${round}/${rounds}`;
  const load: Omit<LoadOptions, 'durationS'> = {
    baseUrl: started.server.url,
    request: contender.plan.request,
    expect: contender.plan.expect,
    connections: options.connections,
  };

  progress.phase(`${base} · warm-up ${options.warmupS} s`);
  const warm = await generator.start({ ...load, durationS: options.warmupS }).done;

  progress.phase(`${base} · measuring ${options.durationS} s`);
  const run = generator.start({ ...load, durationS: options.durationS });
  const pids = new Map([
    ['server', started.server.pid],
    ['loadgen', run.pid],
  ]);
  if (started.storePid !== null) pids.set('store', started.storePid);
  pids.set('runner', process.pid);
  const window = new CpuWindow(pids);
  await run.started;
  window.sample();
  const startedAt = performance.now();
  const startUs = Number(process.hrtime.bigint() / 1000n);
  const timer = setInterval(() => {
    window.sample();
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
    result = await run.done;
  } finally {
    clearInterval(timer);
  }
  window.sample();
  if (ctx.profileDir !== null) {
    const folder = profileFolder(scenario, contender.id);
    const windows = ctx.profileWindows.get(folder) ?? [];
    windows.push({ startUs, endUs: Number(process.hrtime.bigint() / 1000n) });
    ctx.profileWindows.set(folder, windows);
  }

  const server = window.figure('server');
  const store = window.figure('store');
  const steal = window.stealFraction();
  const reason = invalidReason(result);
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
    warmup: { rps: warm.rps, invalidReason: invalidReason(warm) },
  };
}
