/**
 * A private Redis Cluster of three masters and three replicas (`redis-server --cluster-enabled
 * yes` ×6, joined by `redis-cli --cluster create … --cluster-replicas 1`), all on free ports and
 * stopped at teardown. For the `redis-cluster` store's failover test.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { findRedisServer, sendRedisCommand, startRedisServer } from './redis_server.js';
import type { RedisServer } from './redis_server.js';

const run = promisify(execFile);

export interface RedisClusterSetup {
  /** `redis://127.0.0.1:port` of every node, as the store's `nodes`. */
  readonly nodes: readonly string[];
  readonly servers: readonly RedisServer[];
  /** The port of some replica now. */
  replicaPort(): Promise<number>;
  /** `CLUSTER FAILOVER` sent to the replica on `port`; resolves its reply. */
  failover(port: number): Promise<string | null>;
  /** Resolves once the node on `port` is a master and the cluster state is ok everywhere. */
  waitForMaster(port: number, timeoutMs: number): Promise<void>;
  stop(): Promise<void>;
}

async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`redis cluster setup: ${what} within ${timeoutMs} ms`);
}

/** Null when redis-server or redis-cli is missing: the caller skips. */
export async function startRedisCluster(): Promise<RedisClusterSetup | null> {
  const server = findRedisServer();
  if (server === null) return null;
  const cli = path.join(path.dirname(server), 'redis-cli');
  const dir = mkdtempSync(path.join(tmpdir(), 'tessera-cluster-'));
  const servers: RedisServer[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(servers.map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < 6; i += 1) {
      servers.push(
        await startRedisServer({
          args: [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            path.join(dir, `nodes-${i}.conf`),
            '--cluster-node-timeout',
            '2000',
            '--dir',
            dir,
            '--repl-diskless-sync-delay',
            '0',
          ],
        }),
      );
    }
    await run(cli, ['--cluster', 'create', ...servers.map((s) => `127.0.0.1:${s.port}`), '--cluster-replicas', '1', '--cluster-yes'], {
      timeout: 30_000,
    });
    await waitFor('the cluster did not become ok', 30_000, async () => {
      for (const s of servers) {
        if (!((await sendRedisCommand(s.port, 'CLUSTER INFO', 500)) ?? '').includes('cluster_state:ok')) return false;
        const info = (await sendRedisCommand(s.port, 'INFO replication', 500)) ?? '';
        // Every master's replica synced.
        if (info.includes('role:master') && !info.includes('state=online')) return false;
      }
      return true;
    });
  } catch (err) {
    await stop();
    throw err;
  }
  const role = async (port: number): Promise<string> => {
    const info = (await sendRedisCommand(port, 'INFO replication', 500)) ?? '';
    return /role:(\w+)/.exec(info)?.[1] ?? '';
  };
  return {
    nodes: servers.map((s) => s.url),
    servers,
    async replicaPort() {
      for (const s of servers) if ((await role(s.port)) === 'slave') return s.port;
      throw new Error('no replica in the cluster');
    },
    failover: (port) => sendRedisCommand(port, 'CLUSTER FAILOVER', 1000),
    async waitForMaster(port, timeoutMs) {
      await waitFor(`the node on ${port} did not become master`, timeoutMs, async () => {
        if ((await role(port)) !== 'master') return false;
        for (const s of servers) {
          if (!((await sendRedisCommand(s.port, 'CLUSTER INFO', 500)) ?? '').includes('cluster_state:ok')) return false;
        }
        return true;
      });
    },
    stop,
  };
}
