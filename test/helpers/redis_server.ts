/**
 * A private `redis-server`: its own free port, no persistence, killed at exit. One per test file,
 * and one per bench run (bench/runner/context.ts). Tests stop and start it again on the same port
 * to simulate an outage and its recovery.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { freePort } from './free_port.js';
import { killAtExit } from './kill_at_exit.js';

const fallbackPort = 6379;

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** The running process's id (the bench reads its CPU time); null when not managed or stopped. */
  readonly pid: number | null;
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

/** The first executable `redis-server` on the PATH, or null. */
export function findRedisServer(): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, 'redis-server');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this folder
    }
  }
  return null;
}

/**
 * Sends one inline command over a raw socket and resolves the raw reply: a status or error line,
 * or a whole bulk string (`INFO`). Null when nothing complete came back within `timeoutMs`.
 */
export function sendRedisCommand(port: number, command: string, timeoutMs = 200): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let received = '';
    const finish = (reply: string | null): void => {
      socket.destroy();
      resolve(reply);
    };
    socket.setTimeout(timeoutMs, () => finish(null));
    socket.once('error', () => finish(null));
    socket.once('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const lineEnd = received.indexOf('\r\n');
      if (lineEnd === -1) return;
      // A bulk reply (`$<length>`) is complete once its length and the closing CRLF arrived.
      if (!received.startsWith('$')) finish(received);
      else if (received.length >= lineEnd + 2 + Number(received.slice(1, lineEnd)) + 2) finish(received);
    });
  });
}

async function waitForPing(port: number, timeoutMs: number, child: ChildProcess, output: () => string): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`redis-server on port ${port} exited early (${child.exitCode ?? child.signalCode}): ${output()}`);
    }
    if ((await sendRedisCommand(port, 'PING'))?.startsWith('+PONG')) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`redis-server on port ${port} did not answer PING within ${timeoutMs} ms`);
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
export async function startRedisServer(options: { port?: number; args?: readonly string[] } = {}): Promise<RedisServer> {
  const binary = findRedisServer();
  if (binary === null) {
    return {
      url: `redis://127.0.0.1:${fallbackPort}`,
      port: fallbackPort,
      pid: null,
      warning: `no redis-server on the PATH; using the Redis at 127.0.0.1:${fallbackPort}`,
      managed: false,
      stop: async () => {},
      start: async () => {},
      restart: async () => {},
      pause: () => {},
      resume: () => {},
    };
  }
  let port = options.port ?? (await freePort());
  let child: ChildProcess | null = null;

  const start = async (): Promise<void> => {
    if (child !== null) return;
    const args = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--loglevel',
      'warning',
      ...(options.args ?? []),
    ];
    const spawned = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = spawned;
    killAtExit(spawned);
    // Its warnings (redis-server logs to stdout) are kept for the error of a server that does not
    // come up, not printed.
    let stderr = '';
    const keep = (chunk: Buffer): void => void (stderr = (stderr + chunk.toString('utf8')).slice(-2000));
    spawned.stdout?.on('data', keep);
    spawned.stderr?.on('data', keep);
    try {
      await waitForPing(port, 5000, spawned, () => stderr.trim());
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

  // A free port can be taken between the probe and the spawn by another test file's server (or, in
  // cluster mode, its bus port, port + 10000, can be in use): a server that exits at once is tried
  // again on another port, unless the caller chose the port.
  for (let attempt = 1; ; attempt++) {
    try {
      await start();
      break;
    } catch (err) {
      if (options.port !== undefined || attempt >= 4 || !(err instanceof Error) || !err.message.includes('exited early')) throw err;
      port = await freePort();
    }
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    get pid() {
      return child?.pid ?? null;
    },
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

/**
 * `MONITOR` over a raw socket: every command the server runs, as its arguments, to `onCommand`.
 * ioredis's `monitor()` can take a monitor line for the reply of a command of its own on a loaded
 * machine ("Command queue state error"); a socket that only reads has nothing to confuse.
 * Resolves once the server has answered `+OK`, so that what runs after is seen.
 */
export async function monitorRedis(port: number, onCommand: (args: string[]) => void): Promise<{ stop: () => void }> {
  const socket = connect({ host: '127.0.0.1', port });
  let buffered = '';
  let started: (() => void) | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    started = resolve;
    socket.once('error', reject);
  });
  socket.once('connect', () => socket.write('MONITOR\r\n'));
  socket.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    for (let end = buffered.indexOf('\r\n'); end !== -1; end = buffered.indexOf('\r\n')) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      if (line === '+OK') {
        started?.();
        continue;
      }
      // +<time> [<db> <client>] "<arg>" "<arg>" …, each argument quoted with \" and \\ escapes.
      const args = [...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => (m[1] as string).replace(/\\(.)/g, '$1'));
      if (args.length > 0) onCommand(args);
    }
  });
  await ready;
  return { stop: () => socket.destroy() };
}
