// `npm run bench -- scale-store` at tiny counts against the real gateway on a real redis-server
// (bench/scale/stored_clients.ts, issue 34): the clients are written with the registry's own key
// and record, the gateway authenticates them from the store (its config file has none of them: a
// token for each load's first and last id, and every answer of the loads a token), and every
// field of the table is there. Timings are not judged: they say nothing at 10 clients.
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { createAutocannon } from '../load/autocannon.js';
import { formatScale } from '../report/scale.js';
import { medianUs, type ScaleResults } from '../report/scale_results.js';
import { RunContext } from '../runner/context.js';
import { parseOptions } from '../runner/options.js';
import type { Progress } from '../runner/progress.js';
import { resolveTarget } from '../runner/target.js';
import { runScaleBench } from '../scale/scale_bench.js';

t.setTimeout(120_000);

const redisInstalled = spawnSync('redis-server', ['--version']).status === 0;
const quiet = { phase() {}, update() {}, clear() {}, log() {} } as unknown as Progress;

t.test(
  'scale-store at 10 and 200 stored clients: a row per count with every figure',
  { skip: !redisInstalled && 'redis-server is not installed' },
  async (t) => {
    const options = parseOptions([
      'scale-store',
      '--stored-clients',
      '200,10',
      '--duration',
      '1',
      '--warmup',
      '0.5',
      '--rounds',
      '1',
      '--connections',
      '8',
    ]);
    t.same(options.storedClients, [200, 10]);
    const ctx = new RunContext(options, createAutocannon(), resolveTarget(undefined), quiet);
    t.teardown(() => ctx.close());
    const results: ScaleResults = await runScaleBench(ctx, { config: false, store: true });
    t.comment(formatScale(results));
    t.same(results.failures, [], 'no part failed');
    t.same([results.startUp, results.cost, results.store], [[], [], []], 'the config-clients parts did not run');
    const stored = results.storedClients;
    t.ok(stored != null, 'the stored-clients part is in the results');
    if (stored == null) return;
    t.same(
      stored.rows.map((row) => row.clients),
      [10, 200],
      'one row per count, ascending',
    );
    for (const row of stored.rows) {
      t.ok(row.seedSeconds >= 0 && row.readyMs > 0, `${row.clients}: seeding and start-up timed`);
      t.ok(row.redisUsedBytes !== null && row.redisUsedBytes > 0, `${row.clients}: Redis used_memory read`);
      t.ok(row.rssBytes !== null && row.rssAfterLoadBytes !== null, `${row.clients}: RSS once ready and after load`);
      t.same(
        row.loads.map((load) => [load.id, load.cycled, load.clients]),
        [
          [`stored-${row.clients}-spread`, Math.min(row.clients, 1000), row.clients],
          [`stored-${row.clients}-one`, 1, row.clients],
        ],
        `${row.clients}: the spread and one-id loads (too few clients to go past the cache)`,
      );
      for (const load of row.loads) {
        t.equal(load.rounds.length, 1, `${load.label}: one round`);
        t.ok(
          load.rounds.every((round) => round.valid),
          `${load.label}: every answer a token (${load.rounds.map((r) => r.invalidReason).join(', ')})`,
        );
        t.ok(medianUs(load) !== null, `${load.label}: server µs per request`);
        t.ok(
          load.rounds.every((round) => typeof round.storeUsPerRequest === 'number' && typeof round.storeReadsPerRequest === 'number'),
          `${load.label}: redis-server µs and GETs per request`,
        );
      }
    }
    const cell = String.raw`[\d.]+ \([\d.]+x\) · Redis \+[\d.]+, [\d.]+ GET`;
    t.match(
      formatScale(results),
      new RegExp(String.raw`\| 200 \| [\d.]+ \| \d+ \| [\d,]+ \| \d+ \| \d+ \| ${cell} \| ${cell} \| – \|`),
      'the table row: the figures, each ratio to the first count, the Redis side',
    );
  },
);
