/**
 * `--baseline-root`: the comparison of the measured checkout with the baseline, per store
 * (bench/report/baseline.ts), its line below the table (bench/report/table.ts), and the committed
 * run, made without one.
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import { baselineComparisons } from '../report/baseline.js';
import { chartSpec } from '../report/chart.js';
import {
  latestResults,
  type BenchResults,
  type ContenderResult,
  type RoundResult,
  type ScenarioResult,
  type Summary,
} from '../report/results.js';
import { formatBaselineComparison, formatScenario, formatSettings } from '../report/table.js';
import { roundResult, summary } from './summary_fixture.js';

function round(n: number, rps: number, valid = true): RoundResult {
  return roundResult({ n, rps, valid });
}

function contender(
  kind: ContenderResult['kind'],
  store: ContenderResult['store'],
  s: Summary | null,
  rounds: RoundResult[] = [],
): ContenderResult {
  const name = kind === 'baseline' ? 'Tessera baseline' : kind === 'tessera' ? 'Tessera' : kind;
  return {
    id: store === null ? kind : `${kind}/${store}`,
    label: store === null || kind === 'peer' ? name : `${name} (${store})`,
    kind,
    store,
    detail: {},
    kinds: [],
    rounds,
    summary: s,
    memory: { idleRssBytes: null, afterRssBytes: null, peakRssBytes: null },
    error: s === null ? 'could not start' : null,
  };
}

const memory = [
  contender('tessera', 'memory', summary(11_000, { serverUsPerRequest: 80 }), [round(1, 10_000), round(2, 12_000)]),
  // Round 2 of the baseline is invalid: no ratio for that round.
  contender('baseline', 'memory', summary(8_000, { serverUsPerRequest: 100 }), [round(1, 8_000), round(2, 12_000, false)]),
];
const redis = [
  contender('tessera', 'redis', summary(9_000, { serverUsPerRequest: 60, storeUsPerRequest: 20 }), [round(1, 9_000)]),
  contender('baseline', 'redis', summary(10_000, { serverUsPerRequest: 50, storeUsPerRequest: 25 }), [round(1, 10_000)]),
];
const peer = contender('peer', null, summary(2_000, { serverUsPerRequest: 400 }), [round(1, 2_000)]);

t.test('one comparison per store, this checkout over the baseline', async (t) => {
  const comparisons = baselineComparisons([...memory, ...redis, peer]);
  t.equal(comparisons.length, 2, 'memory and redis; the peer is not a baseline');
  const [m, r] = comparisons;
  t.match(m, {
    store: 'memory',
    tessera: 'tessera/memory',
    baseline: 'baseline/memory',
    tesseraRps: 11_000,
    baselineRps: 8_000,
    rps: 11_000 / 8_000,
  });
  t.same(m?.perRound, [1.25], 'only the round both measured validly');
  t.match(m, { tesseraUsPerRequest: 80, baselineUsPerRequest: 100, usPerRequest: 0.8, storeUsPerRequest: null });
  t.match(r, {
    store: 'redis',
    rps: 0.9,
    usPerRequest: 1.2,
    tesseraStoreUsPerRequest: 20,
    baselineStoreUsPerRequest: 25,
    storeUsPerRequest: 0.8,
  });
  t.same(r?.perRound, [0.9]);
});

t.test('no comparison without a baseline, or where one side has no figures', async (t) => {
  t.same(baselineComparisons([...memory.filter((c) => c.kind === 'tessera'), peer]), []);
  t.same(baselineComparisons([memory[0]!, contender('baseline', 'memory', null)]), [], 'the baseline failed');
  t.same(baselineComparisons([contender('tessera', 'memory', null), memory[1]!]), [], 'this checkout failed');
  t.same(baselineComparisons([memory[0]!, redis[1]!]), [], 'a baseline on another store than Tessera');
  const noCpu = baselineComparisons([contender('tessera', null, summary(5_000)), contender('baseline', null, summary(4_000))]);
  t.match(noCpu, [{ store: null, rps: 1.25, usPerRequest: null }], 'a store-less scenario, CPU unknown (not Linux)');
});

t.test('the line below the table: req/s and server µs/req of both, and their ratios', async (t) => {
  const contenders = [...memory, ...redis];
  const [m, r] = baselineComparisons(contenders);
  t.equal(
    formatBaselineComparison(m!, contenders),
    'Tessera (memory) vs Tessera baseline (memory): **1.38x (+37.5%)** req/s (11,000 vs 8,000; rounds: 1.25x); server µs/req 80.0 vs 100: **0.80x (−20.0%)**',
  );
  t.equal(
    formatBaselineComparison(r!, contenders),
    'Tessera (redis) vs Tessera baseline (redis): **0.90x (−10.0%)** req/s (9,000 vs 10,000; rounds: 0.90x); server µs/req 60.0 vs 50.0: **1.20x (+20.0%)**; Redis µs/req 20.0 vs 25.0: 0.80x (−20.0%)',
  );
});

function scenario(contenders: ContenderResult[], baselines?: ScenarioResult['baselines']): ScenarioResult {
  return {
    name: 'client_credentials',
    measures: 'm',
    contenders,
    ratios: [],
    notes: [],
    hasErrors: false,
    ...(baselines === undefined ? {} : { baselines }),
  };
}

t.test('the scenario report prints the comparisons, and none when the file has none', async (t) => {
  const contenders = [...memory, peer];
  const report = formatScenario(scenario(contenders, baselineComparisons(contenders)));
  t.match(report, /^\| Tessera baseline \(memory\) \| 8,000 \|/m, 'the baseline has its row');
  t.match(report, /^- Tessera \(memory\) vs Tessera baseline \(memory\): \*\*1\.38x/m);
  t.notMatch(formatScenario(scenario(contenders)), / vs Tessera baseline/, 'a scenario without `baselines` (older files)');
});

t.test('the committed run, made without a baseline, reports and charts without one', async (t) => {
  const results = JSON.parse(readFileSync(latestResults, 'utf8')) as BenchResults;
  t.equal(results.settings.baseline ?? null, null, 'results/latest.json: a run without --baseline-root');
  t.notMatch(formatSettings(results), /baseline/, 'settings line');
  for (const s of results.scenarios) {
    t.same(s.baselines ?? [], [], `${s.name}: no comparisons`);
    t.notMatch(formatScenario(s), / vs Tessera baseline/, `${s.name}: no comparison line`);
  }
  t.notMatch(JSON.stringify(chartSpec(results)), /"baseline"/, "no baseline in the chart's legend");
});

t.test('a run with a baseline says so in its settings and chart legend', async (t) => {
  const old = JSON.parse(readFileSync(latestResults, 'utf8')) as BenchResults;
  const contenders = [...memory, peer];
  const results: BenchResults = {
    ...old,
    settings: { ...old.settings, baseline: { root: '/tmp/tessera-base', label: 'main c47a9da', target: 'dist', note: null, git: null } },
    scenarios: [scenario(contenders, baselineComparisons(contenders))],
  };
  t.match(formatSettings(results), /; baseline "main c47a9da": Tessera from dist\/ of \/tmp\/tessera-base/);
  t.match(chartSpec(results), {
    vconcat: [{ layer: [{ encoding: { color: { scale: { domain: ['tessera', 'baseline', 'peer', 'ceiling'] } } } }] }],
  });
});
