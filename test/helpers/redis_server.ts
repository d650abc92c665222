/**
 * A private `redis-server` per test file: its own free port, no persistence, killed at exit.
 * Tests stop and start it again on the same port to simulate an outage and its recovery.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { freePort } from './free_port.js';

const redisServerBinary = '/usr/bin/redis-server';
const fallbackPort = 6379;

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /**
   * Set when no redis-server binary was found and the tests fall back to an already running
   * 127.0.0.1:6379; `t.comment()` it. Such a server cannot be stopped or restarted.
   */
  readonly warning: string | null;
  /** Whether this helper owns the process (so `stop`/`start` work). */
  readonly managed: boolean;
  /** Stops the server and waits until the process has exited. */
  stop(): Promise<void>;
  /** Starts it again on the same port and waits until it answers PING. */
  start(): Promise<void>;
  /** `stop()` then `start()`. */
  restart(): Promise<void>;
  /** Freezes the process (SIGSTOP): connections stay open but nothing answers. */
  pause(): void;
  /** Thaws a paused process (SIGCONT). */
  resume(): void;
}

/** One PING over a raw socket: resolves whether `+PONG` came back within `timeoutMs`. */
function answersPing(port: number, timeoutMs = 200): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let received = '';
    const finish = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (received.includes('\r\n')) finish(received.startsWith('+PONG'));
    });
  });
}

async function waitForPing(port: number, timeoutMs: number, child: ChildProcess): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`redis-server on port ${port} exited early (${child.exitCode ?? child.signalCode})`);
    }
    if (await answersPing(port)) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`redis-server on port ${port} did not answer PING within ${timeoutMs} ms`);
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function killAllAtExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' handlers must be synchronous: a plain kill is all there is time for.
  process.on('exit', () => {
    for (const child of running) child.kill('SIGKILL');
  });
}

/**
 * Starts a private redis-server on a free port (or `options.port`) and resolves once it answers
 * PING.
 *
 * @example
 * ```ts
 * const redis = await startRedisServer();
 * t.teardown(() => redis.stop());
 * if (redis.warning) t.comment(redis.warning);
 * ```
 */
export async function startRedisServer(options: { port?: number } = {}): Promise<RedisServer> {
  if (!existsSync(redisServerBinary)) {
    return {
      url: `redis://127.0.0.1:${fallbackPort}`,
      port: fallbackPort,
      warning: `${redisServerBinary} not found; using the Redis at 127.0.0.1:${fallbackPort}`,
      managed: false,
      stop: async () => {},
      start: async () => {},
      restart: async () => {},
      pause: () => {},
      resume: () => {},
    };
  }
  killAllAtExit();
  const port = options.port ?? (await freePort());
  let child: ChildProcess | null = null;

  const start = async (): Promise<void> => {
    if (child !== null) return;
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'];
    const spawned = spawn(redisServerBinary, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    child = spawned;
    running.add(spawned);
    spawned.once('exit', () => running.delete(spawned));
    try {
      await waitForPing(port, 5000, spawned);
    } catch (err) {
      spawned.kill('SIGKILL');
      child = null;
      throw err;
    }
  };

  const stop = async (): Promise<void> => {
    const current = child;
    if (current === null) return;
    child = null;
    if (current.exitCode !== null || current.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => current.once('exit', () => resolve()));
    current.kill('SIGCONT');
    current.kill('SIGTERM');
    const killer = setTimeout(() => current.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(killer);
  };

  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    warning: null,
    managed: true,
    stop,
    start,
    restart: async () => {
      await stop();
      await start();
    },
    pause: () => {
      child?.kill('SIGSTOP');
    },
    resume: () => {
      child?.kill('SIGCONT');
    },
  };
}
