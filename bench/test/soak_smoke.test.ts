// `npm run bench -- soak` for a few seconds against the real gateway on a real redis-server
// (bench/README.md, "Soak and bursts"): two bursts over a light steady load, every request
// answered (served, or refused with 503 + Retry-After) and the dispatcher's gauges at 0 after.
// Bursts of 1,000, not fewer: before the dispatcher fix (6f7a237) one burst of 1,000 left 273
// requests unanswered and the in-flight gauge at 274 (run with --gateway-root at 6f7a237^);
// bursts of 200 fit its batch slots and passed.
import { spawnSync } from 'node:child_process';
import t from 'tap';
import type { LoadGenerator } from '../load/load_generator.js';
import { formatSoak, totalOf } from '../report/soak.js';
import { RunContext } from '../runner/context.js';
import { parseOptions } from '../runner/options.js';
import type { Progress } from '../runner/progress.js';
import { resolveTarget } from '../runner/target.js';
import { runSoak } from '../soak/soak_bench.js';

// With dist/ built the file took 19 s on a 2-vCPU VM at load average 27; from the TypeScript
// sources (CI does not build dist/) the gateway's start alone took 30 s of ~55 s.
t.setTimeout(180_000);

const redisInstalled = spawnSync('redis-server', ['--version']).status === 0;
const quiet = { phase() {}, update() {}, clear() {}, log() {} } as unknown as Progress;

t.test(
  'a 6 s soak with a burst of 1,000 connections every 2 s answers every request and leaves nothing in flight',
  { skip: !redisInstalled && 'redis-server is not installed' },
  async (t) => {
    const options = parseOptions([
      'soak',
      '--duration',
      '6',
      '--burst-size',
      '1000',
      '--burst-every',
      '2',
      '--rate',
      '200',
      '--connections',
      '16',
    ]);
    const ctx = new RunContext(options, {} as LoadGenerator, resolveTarget(undefined), quiet);
    t.teardown(() => ctx.close());
    const results = await runSoak(ctx, { ...options.soak, connections: options.connections });
    t.comment(formatSoak(results));
    t.same(results.failures, [], 'the run passes');
    t.equal(results.burstWindows.length, 2, 'two bursts: at 2 s and at 4 s');
    const bursts = totalOf('bursts', results.bursts);
    t.equal(bursts.sent, 2000, 'every burst sent its 1,000 requests');
    t.equal(bursts.served + bursts.refused, bursts.sent, 'every burst request answered');
    t.same(
      results.bursts.map((count) => [count.name, count.sent]),
      [
        ['client_credentials', 800],
        ['refresh_token', 500],
        ['device_authorization', 300],
        ['authorization_code', 200],
        ['introspection', 200],
      ],
      'each kind its share of the bursts',
    );
    const steady = totalOf('steady', results.steady);
    t.ok(steady.sent > 0, `the steady load sent ${steady.sent} requests`);
    t.equal(steady.served + steady.refused, steady.sent, 'every steady request answered');
    t.ok(bursts.served > 0 && steady.served > 0, 'and some of each were served, not all refused');
    t.same(results.gauges, { inFlight: 0, queueDepth: 0 }, 'nothing in flight nor waiting once the traffic stopped');
    t.ok(results.phases.burst.requests === 2000 && results.phases.burst.p99 !== null, 'a p99 for the burst connections');
    t.equal(
      results.phases.steadyBetween.requests + results.phases.steadyDuring.requests,
      steady.served + steady.refused,
      'every steady answer falls in one phase',
    );
    t.ok(results.rss.startBytes !== null && results.rss.endBytes !== null, 'RSS read at start and end');
  },
);
