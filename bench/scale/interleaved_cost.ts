/**
 * Server CPU per client_credentials request for several gateway set-ups (client counts, validators
 * loaded) under the same load generator, interleaved: every round runs each load once, so all of
 * them meet the same noise. Each load spreads its requests over a list of clients (one
 * `Authorization: Basic` header per feed line, cycled), so a per-request cost that grows with the
 * client count cannot hide behind one hot client.
 */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { invalidReason, type LoadGenerator, type LoadKind, type LoadResult } from '../load/load_generator.js';
import type { CostRound } from '../report/scale_results.js';
import type { Progress } from '../runner/progress.js';
import { tokenExpectation } from '../scenarios/checks.js';
import { formPost } from '../scenarios/requests.js';
import type { ChildServer } from '../support/child_server.js';
import { CpuWindow } from '../support/cpu_window.js';

/** One row: a running gateway and the clients its load cycles over. */
export interface CostLoad {
  id: string;
  label: string;
  /** The gateway process: its URL, and its pid for the CPU window. */
  server: Pick<ChildServer, 'url' | 'pid'>;
  /** `Authorization` header values, one per client the load uses. */
  authorizations: readonly string[];
}

export interface InterleavedOptions {
  generator: LoadGenerator;
  rounds: number;
  durationS: number;
  warmupS: number;
  connections: number;
  workDir: string;
  progress: Progress;
  /**
   * The store under the gateways, when there is one to watch: its process (its CPU per request)
   * and a counter of its record reads (`GET` calls), read before and after each measured run.
   */
  store?: { pid: number | null; reads: () => Promise<number | null> };
}

const sampleEveryMs = 250;

/** The load's kind: client_credentials for api1, its Basic header from each feed line in turn. */
function kindOf(load: CostLoad, feedFile: string, start: number): LoadKind {
  return {
    name: 'client_credentials',
    weight: 1,
    request: formPost('/connect/token', { grant_type: 'client_credentials', scope: 'api1' }),
    expect: tokenExpectation({ refreshToken: false, idToken: false }),
    feed: { file: feedFile, count: load.authorizations.length, mode: 'cycle', start, header: 'Authorization' },
  };
}

async function runOnce(
  load: CostLoad,
  kind: LoadKind,
  options: InterleavedOptions,
  durationS: number,
  measured: boolean,
  phase: string,
): Promise<{
  result: LoadResult;
  serverCores: number | null;
  loadgenCores: number | null;
  otherCores: number | null;
  storeCores: number | null;
  storeReads: number | null;
}> {
  const run = options.generator.start({
    baseUrl: load.server.url,
    kinds: [kind],
    connections: options.connections,
    durationS,
    workDir: options.workDir,
  });
  const storePid = options.store?.pid ?? null;
  const window = new CpuWindow(
    new Map<string, number>([
      ['server', load.server.pid],
      ['loadgen', run.pid],
      ['runner', process.pid],
      ...(storePid === null ? [] : ([['store', storePid]] as const)),
    ]),
  );
  const readsBefore = measured && options.store !== undefined ? await options.store.reads() : null;
  await run.started;
  window.sample();
  const startedAt = performance.now();
  const timer = setInterval(() => {
    window.sample();
    if (measured) {
      const server = window.figure('server');
      options.progress.update(
        `${((performance.now() - startedAt) / 1000).toFixed(0)}/${durationS} s · server ${server === null ? '–' : `${Math.round(server.cores * 100)}%`} CPU`,
      );
    }
  }, sampleEveryMs);
  options.progress.phase(phase);
  let result: LoadResult;
  try {
    result = await run.done;
  } finally {
    clearInterval(timer);
  }
  window.sample();
  const readsAfter = readsBefore === null ? null : await options.store?.reads();
  return {
    result,
    serverCores: window.figure('server')?.cores ?? null,
    loadgenCores: window.figure('loadgen')?.cores ?? null,
    otherCores: window.otherCores(),
    storeCores: storePid === null ? null : (window.figure('store')?.cores ?? null),
    storeReads: readsBefore === null || readsAfter === null || readsAfter === undefined ? null : readsAfter - readsBefore,
  };
}

/** Every load once per round, in order, each after a warm-up of its own; returns the rounds per load id. */
export async function measureInterleaved(loads: readonly CostLoad[], options: InterleavedOptions): Promise<Map<string, CostRound[]>> {
  const feeds = new Map<string, { file: string; start: number }>();
  for (const load of loads) {
    const file = path.join(options.workDir, `scale-feed-${load.id.replace(/\W+/g, '_')}.txt`);
    const body = new URLSearchParams({ grant_type: 'client_credentials', scope: 'api1' }).toString();
    writeFileSync(file, `${load.authorizations.map((authorization) => `${authorization}\t${body}`).join('\n')}\n`);
    feeds.set(load.id, { file, start: 0 });
  }
  const rounds = new Map<string, CostRound[]>(loads.map((load) => [load.id, []]));
  try {
    for (let round = 1; round <= options.rounds; round++) {
      for (const load of loads) {
        const feed = feeds.get(load.id) as { file: string; start: number };
        const base = `scale · ${load.label} · round ${round}/${options.rounds}`;
        // Each run goes on where the last one stopped in the feed, so every client comes round in turn.
        const runFed = async (measured: boolean): ReturnType<typeof runOnce> => {
          const seconds = measured ? options.durationS : options.warmupS;
          const phase = `${base} · ${measured ? 'measuring' : 'warm-up'} ${seconds} s`;
          const done = await runOnce(load, kindOf(load, feed.file, feed.start), options, seconds, measured, phase);
          feed.start = (feed.start + (done.result.kinds[0]?.taken ?? 0)) % load.authorizations.length;
          return done;
        };
        await runFed(false);
        const run = await runFed(true);
        const { result } = run;
        const reason = invalidReason(result, options.connections);
        rounds.get(load.id)?.push({
          round,
          rps: result.rps,
          serverUsPerRequest: run.serverCores === null || result.rps <= 0 ? null : (run.serverCores * 1e6) / result.rps,
          serverCores: run.serverCores,
          loadgenCores: run.loadgenCores,
          otherCores: run.otherCores,
          p50Ms: result.latencyMs.p50,
          p99Ms: result.latencyMs.p99,
          valid: reason === null,
          invalidReason: reason,
          ...(options.store === undefined
            ? {}
            : {
                storeUsPerRequest: run.storeCores === null || result.rps <= 0 ? null : (run.storeCores * 1e6) / result.rps,
                storeReadsPerRequest: run.storeReads === null || result.requests <= 0 ? null : run.storeReads / result.requests,
              }),
        });
      }
    }
  } finally {
    for (const feed of feeds.values()) rmSync(feed.file, { force: true });
  }
  return rounds;
}

/** One request with the first and the last header of a load, answered with a token, before any load. */
export async function preflight(load: CostLoad): Promise<void> {
  for (const authorization of [load.authorizations[0], load.authorizations[load.authorizations.length - 1]]) {
    const response = await fetch(`${load.server.url}/connect/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: authorization as string },
      body: 'grant_type=client_credentials&scope=api1',
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    if (response.status !== 200 || !text.startsWith('{"access_token":"'))
      throw new Error(`${load.label}: status ${response.status}: ${text.slice(0, 200)}`);
  }
}
