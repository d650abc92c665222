/**
 * `--processes 1,2` (bench/runner/options.ts): one Tessera contender per process count on Redis,
 * one process on the memory store (a gateway refuses more there), and the scaling line below the
 * table (bench/report/process_scaling.ts).
 */
import t from 'tap';
import type { LoadGenerator } from '../load/load_generator.js';
import { processScalingComparisons } from '../report/process_scaling.js';
import type { ContenderResult } from '../report/results.js';
import { formatScenario } from '../report/table.js';
import { contendersOf } from '../runner/contenders.js';
import { RunContext } from '../runner/context.js';
import { parseOptions } from '../runner/options.js';
import type { Progress } from '../runner/progress.js';
import { clientCredentials } from '../scenarios/client_credentials.js';
import { roundResult, summary } from './summary_fixture.js';

function contextOf(argv: string[]): RunContext {
  // contendersOf reads the options and the target only; nothing here starts or measures.
  const ctx = new RunContext(parseOptions(argv), {} as LoadGenerator, { kind: 'source', note: null }, {} as Progress);
  t.teardown(() => ctx.close());
  return ctx;
}

t.test('--processes takes a list, in any order and form, and refuses what is not a count', async (t) => {
  t.same(parseOptions([]).processes, [1], 'one process by default');
  t.same(parseOptions(['--processes', '2,1']).processes, [1, 2]);
  t.same(parseOptions(['--processes', '2', '--processes', '1', '--processes', '2']).processes, [1, 2]);
  for (const bad of ['0', 'two', '1.5', '65']) {
    t.throws(
      () => parseOptions(['--processes', bad]),
      { message: `--processes must be whole numbers from 1 to 64, not "${bad}"` },
      `refuses ${bad}`,
    );
  }
});

t.test('with 1,2 each Redis contender is measured with both counts, the memory one with one process', async (t) => {
  const contenders = contendersOf(clientCredentials, contextOf(['--processes', '1,2']));
  const tessera = contenders.filter((c) => c.kind === 'tessera');
  t.same(
    tessera.map((c) => [c.id, c.label, c.processes, c.oneProcess]),
    [
      ['tessera/memory', 'Tessera (memory, 1 process)', 1, null],
      ['tessera/redis', 'Tessera (redis, 1 process)', 1, null],
      ['tessera/redis/x2', 'Tessera (redis, 2 processes)', 2, 'tessera/redis'],
    ],
  );
  t.ok(
    contenders.some((c) => c.kind === 'peer'),
    'the peer still runs beside them',
  );
});

t.test('without --processes the contenders keep their ids and labels', async (t) => {
  const tessera = contendersOf(clientCredentials, contextOf(['--store', 'redis'])).filter((c) => c.kind === 'tessera');
  t.same(
    tessera.map((c) => [c.id, c.label, c.processes]),
    [['tessera/redis', 'Tessera (redis)', 1]],
  );
});

t.test('the scaling line compares two processes with one, from the medians and per round', async (t) => {
  const contender = (id: string, label: string, rps: number[], extra: Partial<ContenderResult>): ContenderResult => ({
    id,
    label,
    kind: 'tessera',
    store: 'redis',
    detail: {},
    kinds: [],
    rounds: rps.map((value, i) => roundResult({ n: i + 1, rps: value })),
    summary: summary(rps.reduce((a, b) => a + b, 0) / rps.length, { serverCores: 1.9, serverUsPerRequest: 100 }),
    memory: { idleRssBytes: null, afterRssBytes: null, peakRssBytes: null },
    error: null,
    ...extra,
  });
  const contenders = [
    contender('tessera/redis', 'Tessera (redis, 1 process)', [10_000, 10_000], {}),
    contender('tessera/redis/x2', 'Tessera (redis, 2 processes)', [17_000, 19_000], { processes: 2, oneProcess: 'tessera/redis' }),
  ];
  const scaling = processScalingComparisons(contenders);
  t.equal(scaling.length, 1);
  t.match(scaling[0], { processes: 2, scaled: 'tessera/redis/x2', single: 'tessera/redis', rps: 1.8, perRound: [1.7, 1.9] });
  const text = formatScenario({
    name: 'client_credentials',
    measures: 'm',
    contenders,
    ratios: [],
    scaling,
    notes: [],
    hasErrors: false,
  });
  t.match(
    text,
    '- Tessera (redis, 2 processes): 1.80x the req/s of Tessera (redis, 1 process) (18,000 against 10,000; 2x would be perfect) (rounds: 1.70x, 1.90x)',
  );
});
