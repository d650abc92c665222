/**
 * A private redis-server for one bench run: its own free port, no persistence, stopped at the end.
 */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { freePort } from './free_port.js';

export interface BenchRedis {
  readonly url: string;
  readonly pid: number;
  readonly version: string;
  stop(): Promise<void>;
}

function sendCommand(port: number, command: string, timeoutMs = 300): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let received = '';
    const finish = (value: string | null): void => {
      socket.destroy();
      resolve(value);
    };
    socket.setTimeout(timeoutMs, () => finish(null));
    socket.once('error', () => finish(null));
    socket.once('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      // A status reply ends at its first CRLF; a bulk reply ($len) once len bytes arrived.
      if (received.startsWith('$')) {
        const header = received.indexOf('\r\n');
        if (header !== -1 && received.length >= header + 2 + Number(received.slice(1, header)) + 2) finish(received);
      } else if (received.includes('\r\n')) finish(received);
    });
  });
}

export async function startBenchRedis(): Promise<BenchRedis> {
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'];
  const child = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const spawnError = new Promise<never>((_, reject) =>
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'ENOENT'
          ? new Error('redis-server is not installed (Debian: apt-get install -y redis-server); or run with --store memory')
          : err,
      ),
    ),
  );
  process.on('exit', () => child.kill('SIGKILL'));

  const until = Date.now() + 5000;
  const ready = (async () => {
    while (Date.now() < until) {
      if (child.exitCode !== null) throw new Error(`redis-server exited early (${child.exitCode}): ${stderr}`);
      if ((await sendCommand(port, 'PING'))?.startsWith('+PONG')) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`redis-server on port ${port} did not answer PING within 5 s`);
  })();
  await Promise.race([ready, spawnError]);
  const info = (await sendCommand(port, 'INFO server')) ?? '';
  const version = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: child.pid as number,
    version,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(killer);
    },
  };
}
