/**
 * `npm run bench -- soak` (only when named): Tessera on Redis under the `mixed` scenario's steady
 * load for `--duration` seconds (300 when not given), with a burst of `--burst-size` new
 * connections (2,000) every `--burst-every` seconds (10), each burst a mix of valid requests of
 * five kinds. It counts every request's answer (served, or refused with 503 + Retry-After), reads
 * the dispatcher's gauges once the traffic has stopped, the gateway's RSS at start and end, and
 * latency per phase (bench/README.md, "Soak and bursts"; issue 29).
 *
 * The steady load and the bursts each run in a process of their own (steady_child.ts,
 * burst_child.ts): neither shares an event loop with the other, nor with this runner.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { killAtExit } from '../../test/helpers/kill_at_exit.js';
import { latencyFigures, soakFailures, splitByBursts, type Sample, type SoakResults, type Window } from '../report/soak.js';
import type { RunContext } from '../runner/context.js';
import { contendersOf } from '../runner/contenders.js';
import { mixed } from '../scenarios/mixed.js';
import { sendOnce } from '../scenarios/requests.js';
import type { ActiveScenario, RequestKind, ServerAccess } from '../scenarios/scenario.js';
import { readGauge } from '../support/metrics.js';
import { processMemory } from '../support/proc_stats.js';
import { repoRoot } from '../support/child_server.js';
import { addCount, emptyCount, type TrafficCount } from './classify.js';
import type { BurstMessage, BurstResult } from './burst_child.js';
import { burstKinds, burstShares, configureSoak, splitBurst, steadyKinds } from './soak_kinds.js';
import type { SteadyOptions, SteadyResult } from './steady_child.js';

const steadyEntry = fileURLToPath(new URL('./steady_child.ts', import.meta.url));
const burstEntry = fileURLToPath(new URL('./burst_child.ts', import.meta.url));

/** Longest wait for any one answer before it counts as unanswered. */
export const answerDeadlineMs = 30_000;
/** Single-use items beyond the steady load's estimate, as runner/workload.ts sizes a run's. */
const margin = 1.2;
/** Pause between the last answer and reading the gauges: the gateway's own bookkeeping settles. */
const settleMs = 1000;

/** The soak as a scenario, so that its gateway starts as every other contender's does. */
const soakScenario: ActiveScenario = {
  kind: 'active',
  name: 'soak',
  measures: 'the mixed load on Redis with bursts of new connections: every request answered, nothing left in flight',
  server: 'tessera',
  stores: ['redis'],
  signing: 'ES256',
  configure: configureSoak,
  // The runner's seeding needs a workload; the soak builds its own kinds (soak_kinds.ts).
  ...(mixed.workload === undefined ? {} : { workload: mixed.workload }),
};

export interface SoakOptions {
  durationS: number;
  burstSize: number;
  burstEveryS: number;
  rate: number;
  connections: number;
}

/** A child process speaking the soak's IPC: `started`, then `result` messages. */
function spawnChild(entry: string, args: string[]): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', entry, ...args], {
    cwd: repoRoot,
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  killAtExit(child);
  return child;
}

function whenStarted(child: ChildProcess, name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4000)));
    child.once('exit', (code) => reject(new Error(`${name} exited (${code}) before it started: ${stderr.trim()}`)));
    child.on('message', (message: { type?: string }) => {
      if (message.type === 'started') resolve();
    });
  });
}

/** Items per seeding request: small enough that each stays within the store's command timeout on a busy machine. */
const seedPiece = 1000;

/**
 * Bodies for `count` requests of a kind: its supply's single-use items, or its own body repeated.
 * Seeded in pieces, each tried again after a pause: on a loaded machine a large write can outlast
 * the Redis store's command timeout (500 ms), and the gateway then answers 503 until the store
 * serves again (docs/operations.md, "Redis").
 */
async function bodiesOf(kind: RequestKind, count: number, server: ServerAccess): Promise<string[]> {
  if (count === 0) return [];
  const supply = kind.supply;
  if (supply === undefined) return Array.from({ length: count }, () => kind.request.body ?? '');
  const bodies: string[] = [];
  while (bodies.length < count) {
    const piece = Math.min(seedPiece, count - bodies.length);
    for (let attempt = 1; ; attempt++) {
      try {
        bodies.push(...(await supply.make(piece, server)));
        break;
      } catch (err) {
        if (attempt === 5) throw err;
        await sleep(1000 * attempt);
      }
    }
  }
  return bodies;
}

/** One request of each kind, checked in depth, before any load (as the other scenarios' preflight). */
async function preflight(kinds: readonly RequestKind[], server: ServerAccess): Promise<void> {
  for (const kind of kinds) {
    const [body] = await bodiesOf(kind, 1, server);
    const response = await sendOnce(server.url, { ...kind.request, ...(body === undefined ? {} : { body }) }, 30_000);
    const problem = kind.verify(response.status, await response.text());
    if (problem !== null) throw new Error(`soak preflight, ${kind.name}: ${problem}`);
  }
}

function readSamples(file: string): Sample[] {
  const bytes = readFileSync(file);
  const values = new Float64Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 8);
  const samples: Sample[] = new Array<Sample>(values.length / 2);
  for (let i = 0; i < samples.length; i++) samples[i] = { endMs: values[2 * i] as number, latencyMs: values[2 * i + 1] as number };
  return samples;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function runSoak(ctx: RunContext, options: SoakOptions): Promise<SoakResults> {
  if (ctx.options.stores !== undefined && !ctx.options.stores.includes('redis')) throw new Error('soak runs on Redis only (--store redis)');
  const contender = contendersOf(soakScenario, ctx).find((c) => c.kind === 'tessera' && c.store === 'redis' && c.processes === 1);
  if (contender === undefined) throw new Error('soak: runs one gateway process (--processes 1)');
  ctx.progress.phase('soak · starting redis-server and the gateway');
  const started = await contender.start();
  const { server, access } = started;
  const children: ChildProcess[] = [];
  try {
    const metricsUrl = server.detail.metricsUrl as string;
    const steady = await steadyKinds(access);
    const burst = await burstKinds(access);
    ctx.progress.phase('soak · preflight: one request of each kind, checked in depth');
    await preflight([...steady, ...burst], access);

    // Single-use items for the whole run, made before it: seeding during it would be measured too.
    const bursts = Math.max(0, Math.ceil(options.durationS / options.burstEveryS) - 1);
    ctx.progress.phase(`soak · preparing refresh tokens and codes for ${options.durationS} s and ${bursts} bursts`);
    const steadyWeight = steady.reduce((sum, kind) => sum + kind.weight, 0);
    const steadyKindsOut: SteadyOptions['kinds'] = [];
    for (const kind of steady) {
      let feedFile: string | null = null;
      if (kind.supply !== undefined) {
        const count = Math.ceil(options.rate * options.durationS * (kind.weight / steadyWeight) * margin) + 2 * options.connections + 100;
        feedFile = path.join(ctx.tmp, `soak-steady-${kind.name}.txt`);
        writeFileSync(feedFile, `${(await bodiesOf(kind, count, access)).join('\n')}\n`);
      }
      steadyKindsOut.push({ name: kind.name, weight: kind.weight, request: kind.request, expect: kind.expect, feedFile });
    }
    const perBurst = splitBurst(
      options.burstSize,
      burst.map((kind) => kind.weight),
    );
    const burstBodies: string[][] = [];
    for (const [i, kind] of burst.entries()) burstBodies.push(await bodiesOf(kind, (perBurst[i] ?? 0) * Math.max(1, bursts), access));

    const rssStart = processMemory(server.pid);
    const samplesFile = path.join(ctx.tmp, 'soak-samples.bin');
    const steadyOptions: SteadyOptions = {
      port: Number(new URL(server.url).port),
      connections: options.connections,
      rate: options.rate,
      durationS: options.durationS,
      deadlineMs: answerDeadlineMs,
      kinds: steadyKindsOut,
      samplesFile,
    };
    const optionsFile = path.join(ctx.tmp, 'soak-steady.json');
    writeFileSync(optionsFile, JSON.stringify(steadyOptions));

    const burster = spawnChild(burstEntry, []);
    children.push(burster);
    await whenStarted(burster, 'the burst process');
    const burstResults = new Map<number, (result: BurstResult) => void>();
    burster.on('message', (message: { type?: string; result?: BurstResult }) => {
      if (message.type === 'result' && message.result !== undefined) burstResults.get(message.result.id)?.(message.result);
    });
    const fire = (id: number): Promise<BurstResult> =>
      new Promise((resolve) => {
        burstResults.set(id, resolve);
        const kinds = burst.map((kind, i) => {
          const n = perBurst[i] ?? 0;
          return {
            name: kind.name,
            request: kind.request,
            expect: kind.expect,
            bodies: (burstBodies[i] ?? []).slice(id * n, (id + 1) * n),
          };
        });
        const message: BurstMessage = { type: 'burst', id, port: steadyOptions.port, deadlineMs: answerDeadlineMs, kinds };
        burster.send(message);
      });

    const steadyChild = spawnChild(steadyEntry, [optionsFile]);
    children.push(steadyChild);
    const steadyDone = new Promise<SteadyResult>((resolve, reject) => {
      let result: SteadyResult | undefined;
      steadyChild.on('message', (message: { type?: string; result?: SteadyResult }) => {
        if (message.type === 'result') result = message.result;
      });
      steadyChild.once('exit', (code) => (result === undefined ? reject(new Error(`the steady load exited (${code})`)) : resolve(result)));
    });
    await whenStarted(steadyChild, 'the steady load');
    const loadStarted = Date.now();
    const fired: Promise<BurstResult>[] = [];
    const timers: NodeJS.Timeout[] = [];
    for (let k = 0; k < bursts; k++) {
      timers.push(
        setTimeout(
          () => {
            ctx.progress.phase(`soak · burst ${k + 1}/${bursts} of ${options.burstSize.toLocaleString('en-US')} connections`);
            fired.push(fire(k));
          },
          (k + 1) * options.burstEveryS * 1000,
        ),
      );
    }
    ctx.progress.phase(`soak · steady load for ${options.durationS} s`);
    const ticker = setInterval(() => ctx.progress.update(`${Math.round((Date.now() - loadStarted) / 1000)} s`), 1000);
    let steadyResult: SteadyResult;
    try {
      steadyResult = await steadyDone;
    } finally {
      clearInterval(ticker);
      for (const timer of timers) clearTimeout(timer);
    }
    ctx.progress.phase('soak · waiting for the last answers');
    const burstOutcomes = await Promise.all(fired);
    await sleep(settleMs);
    const gauges = {
      inFlight: await readGauge(metricsUrl, 'tessera_worker_requests_in_flight'),
      queueDepth: await readGauge(metricsUrl, 'tessera_worker_queue_depth'),
    };
    const rssEnd = processMemory(server.pid);

    const burstCounts = burst.map((kind) => emptyCount(kind.name));
    for (const outcome of burstOutcomes) for (const [i, count] of outcome.counts.entries()) addCount(burstCounts[i] as TrafficCount, count);
    const windows: Window[] = burstOutcomes.map((outcome) => ({ startMs: outcome.startedAtMs, endMs: outcome.endedAtMs }));
    const split = splitByBursts(readSamples(samplesFile), windows);
    rmSync(samplesFile, { force: true });
    const share = (kinds: readonly RequestKind[]): Record<string, number> => {
      const total = kinds.reduce((sum, kind) => sum + kind.weight, 0);
      return Object.fromEntries(kinds.map((kind) => [kind.name, Math.round((100 * kind.weight) / total)]));
    };
    const partial: Omit<SoakResults, 'failures'> = {
      settings: {
        durationS: options.durationS,
        connections: options.connections,
        rate: options.rate,
        burstSize: options.burstSize,
        burstEveryS: options.burstEveryS,
        deadlineMs: answerDeadlineMs,
        steadyShares: share(steady),
        burstShares: { ...burstShares },
      },
      steady: steadyResult.counts,
      bursts: burstCounts,
      burstWindows: windows,
      strayAnswers: steadyResult.strayAnswers,
      exhausted: steadyResult.exhausted,
      phases: {
        steadyBetween: latencyFigures(split.between),
        steadyDuring: latencyFigures(split.during),
        burst: latencyFigures(burstOutcomes.flatMap((outcome) => outcome.latenciesMs)),
      },
      gauges,
      rss: { startBytes: rssStart?.rssBytes ?? null, endBytes: rssEnd?.rssBytes ?? null, peakBytes: rssEnd?.peakRssBytes ?? null },
    };
    return { ...partial, failures: soakFailures(partial) };
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- the gateway's last output ---\n${server.output()}`, { cause: err });
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
    await server.stop();
  }
}
