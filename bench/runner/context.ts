import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sendRedisCommand, startRedisServer, type RedisServer } from '../../test/helpers/redis_server.js';
import type { LoadGenerator } from '../load/load_generator.js';
import { closeHandoffPools } from '../support/handoff_cost.js';
import { writeBenchKey, type BenchAlgorithm, type BenchKey } from '../support/keys.js';
import type { BenchOptions } from './options.js';
import type { Progress } from './progress.js';
import type { BaselineCheckout, GatewayTarget } from './target.js';

/** What one `npm run bench` shares across scenarios: options, temp files, keys, Redis. */
export class RunContext {
  readonly tmp = mkdtempSync(path.join(tmpdir(), 'tessera-bench-'));
  private readonly keys = new Map<BenchAlgorithm, Promise<BenchKey>>();
  private redis: Promise<RedisServer> | undefined;
  redisVersion: string | null = null;
  readonly profileDir: string | null;
  /**
   * Measured windows per profile folder, on the monotonic clock V8 stamps profiles with
   * (`process.hrtime`, µs), so that profile summaries leave out start-up, warm-up and idle time.
   */
  readonly profileWindows = new Map<string, { startUs: number; endUs: number }[]>();

  constructor(
    readonly options: BenchOptions,
    readonly generator: LoadGenerator,
    readonly target: GatewayTarget,
    readonly progress: Progress,
    /** `--baseline-root`, measured beside the gateway. */
    readonly baseline: BaselineCheckout | null = null,
  ) {
    this.profileDir = options.cpuProf ? mkdtempSync(path.join(tmpdir(), 'tessera-bench-prof-')) : null;
  }

  key(alg: BenchAlgorithm): Promise<BenchKey> {
    let key = this.keys.get(alg);
    if (key === undefined) {
      key = writeBenchKey(this.tmp, alg);
      this.keys.set(alg, key);
    }
    return key;
  }

  /** The run's private redis-server, started the first time a contender needs it. */
  ensureRedis(): Promise<RedisServer> {
    this.redis ??= (async () => {
      const redis = await startRedisServer();
      // Not one that already runs: the bench reads its server's CPU time, and shares it with nothing.
      if (!redis.managed)
        throw new Error('redis-server is not installed (Debian: apt-get install -y redis-server); or run with --store memory');
      const info = (await sendRedisCommand(redis.port, 'INFO server', 1000)) ?? '';
      this.redisVersion = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
      return redis;
    })();
    return this.redis;
  }

  async close(): Promise<void> {
    await closeHandoffPools();
    if (this.redis !== undefined) await (await this.redis.catch(() => null))?.stop();
    rmSync(this.tmp, { recursive: true, force: true });
  }
}
