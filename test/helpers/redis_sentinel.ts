/**
 * A private Redis Sentinel setup: one master, its replicas and three Sentinels (`redis-server
 * sentinel.conf --sentinel`), all on free ports with short failure detection, all killed at
 * teardown. For the `redis-sentinel` store's tests (docs/operations.md, "Redis Sentinel").
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './free_port.js';
import { killAtExit } from './kill_at_exit.js';
import { findRedisServer, sendRedisCommand, startRedisServer } from './redis_server.js';
import type { RedisServer } from './redis_server.js';

/** How long a Sentinel waits before it calls an unanswering master down. */
export const downAfterMs = 1000;
/** Sentinel's failover timeout; also 2× this before it retries a failover of the same master. */
const failoverTimeoutMs = 3000;

export interface RedisSentinelSetup {
  /** The master group's name. */
  readonly name: string;
  /** The Sentinels as the store's config lists them: `127.0.0.1:port`. */
  readonly sentinels: readonly string[];
  /** The data servers, master first as started; which one is master now: {@link masterPort}. */
  readonly servers: readonly RedisServer[];
  /** The master's port as the Sentinels report it now. */
  masterPort(): Promise<number | null>;
  /** `SENTINEL FAILOVER <name>`, sent to the first Sentinel; resolves its reply. */
  failover(): Promise<string | null>;
  /** SIGKILLs the server that is master now; resolves its port. */
  killMaster(): Promise<number>;
  /** Resolves the new master's port once the first Sentinel names one other than `oldPort` and it accepts writes. */
  waitForNewMaster(oldPort: number, timeoutMs: number): Promise<number>;
  /** Kills every process and removes the config folder. */
  stop(): Promise<void>;
}

function bulkLines(reply: string | null): string[] {
  if (reply === null || !reply.startsWith('*')) return [];
  return reply.split('\r\n').filter((line, i) => i > 0 && line !== '' && !line.startsWith('$') && !line.startsWith('*'));
}

async function sentinelMasterPort(sentinelPort: number, name: string): Promise<number | null> {
  const [, port] = bulkLines(await sendRedisCommand(sentinelPort, `SENTINEL get-master-addr-by-name ${name}`, 500));
  return port === undefined ? null : Number(port);
}

/** A field of `SENTINEL MASTER <name>` (a flat list of names and values). */
async function sentinelMasterField(sentinelPort: number, name: string, field: string): Promise<string | null> {
  const lines = bulkLines(await sendRedisCommand(sentinelPort, `SENTINEL MASTER ${name}`, 500));
  const at = lines.indexOf(field);
  return at === -1 ? null : (lines[at + 1] ?? null);
}

async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`redis sentinel setup: ${what} within ${timeoutMs} ms`);
}

/**
 * Starts a master, `replicas` replicas (default 1) and three Sentinels with quorum 2, and resolves
 * once every Sentinel knows every replica and the other Sentinels (only then can they fail over).
 * Null when there is no redis-server binary: the caller skips.
 *
 * @example
 * ```ts
 * const setup = await startRedisSentinel();
 * if (setup === null) t.skip('no redis-server');
 * t.teardown(() => setup.stop());
 * ```
 */
export async function startRedisSentinel(options: { name?: string; replicas?: number } = {}): Promise<RedisSentinelSetup | null> {
  const binary = findRedisServer();
  if (binary === null) return null;
  const name = options.name ?? 'tessera';
  const dir = mkdtempSync(path.join(tmpdir(), 'tessera-sentinel-'));
  const servers: RedisServer[] = [];
  const sentinelProcesses: ChildProcess[] = [];
  const sentinelPorts: number[] = [];

  const stop = async (): Promise<void> => {
    const exits = sentinelProcesses.map((child) =>
      child.exitCode !== null || child.signalCode !== null
        ? Promise.resolve()
        : new Promise<void>((resolve) => child.once('exit', () => resolve())),
    );
    for (const child of sentinelProcesses) child.kill('SIGKILL');
    await Promise.all([...exits, ...servers.map((server) => server.stop())]);
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    // `--dir`: a replica writes the RDB its master sends it; keep it out of the working directory.
    // `repl-diskless-sync-delay 0`: a replica re-pointed by a failover syncs at once, not after
    // the default 5 s (docs/operations.md, "What a failover costs").
    const serverArgs = ['--dir', dir, '--repl-diskless-sync-delay', '0'];
    const master = await startRedisServer({ args: serverArgs });
    servers.push(master);
    for (let i = 0; i < (options.replicas ?? 1); i += 1) {
      servers.push(await startRedisServer({ args: [...serverArgs, '--replicaof', '127.0.0.1', String(master.port)] }));
    }
    for (let i = 0; i < 3; i += 1) {
      const port = await freePort();
      const file = path.join(dir, `sentinel-${port}.conf`);
      // Sentinel rewrites its config file as it learns the topology: one writable file each.
      writeFileSync(
        file,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${name} 127.0.0.1 ${master.port} 2`,
          `sentinel down-after-milliseconds ${name} ${downAfterMs}`,
          `sentinel failover-timeout ${name} ${failoverTimeoutMs}`,
          `sentinel parallel-syncs ${name} 1`,
          '',
        ].join('\n'),
      );
      const child = spawn(binary, [file, '--sentinel', '--loglevel', 'warning'], { stdio: 'ignore' });
      killAtExit(child);
      sentinelProcesses.push(child);
      sentinelPorts.push(port);
    }
    const replicas = String(servers.length - 1);
    // Synced, not just connected: a replica still waiting for its first RDB acknowledges nothing.
    await waitFor('the replicas did not finish their first sync', 15_000, async () => {
      const info = (await sendRedisCommand(master.port, 'INFO replication', 500)) ?? '';
      return (info.match(/state=online/g) ?? []).length === servers.length - 1;
    });
    await waitFor('the Sentinels did not all see the replicas and each other', 15_000, async () => {
      for (const port of sentinelPorts) {
        if ((await sentinelMasterField(port, name, 'num-slaves')) !== replicas) return false;
        if ((await sentinelMasterField(port, name, 'num-other-sentinels')) !== '2') return false;
      }
      return true;
    });
  } catch (err) {
    await stop();
    throw err;
  }

  const first = sentinelPorts[0] as number;
  const masterPort = (): Promise<number | null> => sentinelMasterPort(first, name);

  return {
    name,
    sentinels: sentinelPorts.map((port) => `127.0.0.1:${port}`),
    servers,
    masterPort,
    failover: () => sendRedisCommand(first, `SENTINEL FAILOVER ${name}`, 1000),
    async killMaster() {
      const port = await masterPort();
      const server = servers.find((s) => s.port === port);
      if (server === undefined || server.pid === null) throw new Error(`no running master on port ${port}`);
      process.kill(server.pid, 'SIGKILL');
      return server.port;
    },
    async waitForNewMaster(oldPort, timeoutMs) {
      let elected = -1;
      // The first Sentinel is the one told to fail over, and the one a client asks first.
      await waitFor(`no new master other than ${oldPort} was elected`, timeoutMs, async () => {
        const port = await masterPort();
        if (port === null || port === oldPort) return false;
        // Promoted: it answers a write (a replica answers READONLY).
        const reply = await sendRedisCommand(port, 'SET tessera-sentinel-probe 1 PX 1000', 500);
        if (!reply?.startsWith('+OK')) return false;
        elected = port;
        return true;
      });
      return elected;
    },
    stop,
  };
}
