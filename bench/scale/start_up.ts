/**
 * One gateway start as an operator runs it (`tessera start --config FILE`, docs/operations.md):
 * the time from spawning the process to `/readyz` answering 200 (keys, worker threads and the
 * store all there), and its resident memory once ready.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { killAtExit } from '../../test/helpers/kill_at_exit.js';
import { processMemory } from '../support/proc_stats.js';

export interface StartUpFigure {
  /** Spawn to the first 200 from `/readyz`, ms. */
  readyMs: number;
  /** RSS of the process (all its threads) a second after it was ready; null outside Linux. */
  rssBytes: number | null;
}

const pollEveryMs = 20;
/** After ready, before reading RSS: the worker threads' last allocations settle. */
const settleMs = 1000;

/** The command that starts the gateway of `root`, compiled (`dist`) or from its sources. */
function startCommand(root: string, target: 'dist' | 'source'): string[] {
  return target === 'dist' ? [path.join(root, 'dist/gateway/cli/main.js')] : ['--import', 'tsx', path.join(root, 'gateway/cli/main.ts')];
}

async function ready(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

/** A gateway started by {@link startTimed}, still running. */
export interface TimedGateway extends StartUpFigure {
  readonly pid: number;
  readonly url: string;
  /** Stops it (SIGINT: at once) and waits for it to exit. */
  stop(): Promise<void>;
}

export interface StartUpOptions {
  root: string;
  target: 'dist' | 'source';
  configFile: string;
  url: string;
  timeoutMs?: number;
}

/** Starts the gateway on `configFile` (which listens on `url`) and measures its start; leaves it running. */
export async function startTimed(options: StartUpOptions): Promise<TimedGateway> {
  const started = performance.now();
  const child = spawn(process.execPath, [...startCommand(options.root, options.target), 'start', '--config', options.configFile], {
    cwd: options.root,
    // No TESSERA_* overrides from the caller's environment: the generated config is the whole truth.
    env: Object.fromEntries(Object.entries({ ...process.env, NODE_ENV: 'production' }).filter(([name]) => !name.startsWith('TESSERA_'))),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  killAtExit(child);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killer);
  };
  try {
    const deadline = started + (options.timeoutMs ?? 180_000);
    while (!(await ready(options.url))) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the gateway exited during start-up:\n${stderr}`);
      if (performance.now() > deadline) throw new Error(`the gateway was not ready within ${options.timeoutMs ?? 180_000} ms:\n${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, pollEveryMs));
    }
    const readyMs = performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, settleMs));
    const memory = child.pid === undefined ? null : processMemory(child.pid);
    return { readyMs, rssBytes: memory?.rssBytes ?? null, pid: child.pid as number, url: options.url, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Starts the gateway on `configFile` (which listens on `url`), measures, and stops it (SIGINT: at once). */
export async function measureStartUp(options: StartUpOptions): Promise<StartUpFigure> {
  const gateway = await startTimed(options);
  await gateway.stop();
  return { readyMs: gateway.readyMs, rssBytes: gateway.rssBytes };
}
