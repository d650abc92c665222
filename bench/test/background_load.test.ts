/**
 * A scenario's background load (a sign-in flood beside client_credentials): its kinds of request
 * and how its answers are counted (bench/runner/background.ts), the comparison of a contender under
 * it with itself alone (bench/report/under_load.ts), its lines below the table, and the baseline
 * comparison, which must pair like with like when each checkout runs both ways.
 */
import t from 'tap';
import type { LoadResult } from '../load/load_generator.js';
import { baselineComparisons } from '../report/baseline.js';
import type { BackgroundRound, ContenderResult, RoundResult, Summary } from '../report/results.js';
import { formatScenario, formatUnderLoad } from '../report/table.js';
import { underLoadComparisons } from '../report/under_load.js';
import { backgroundKinds, backgroundRound, shedKindName } from '../runner/background.js';
import { clientCredentialsSigninFlood } from '../scenarios/client_credentials_signin_flood.js';
import type { BackgroundLoad } from '../scenarios/scenario.js';
import { roundResult, summary } from './summary_fixture.js';

const flood = clientCredentialsSigninFlood.background as BackgroundLoad;

function floodResult(counts: { sent: number; served: number; shed: number }, extra: Partial<LoadResult> = {}): LoadResult {
  return {
    requests: counts.served + counts.shed,
    durationS: 5,
    rps: (counts.served + counts.shed) / 5,
    latencyMs: { p50: 1, p90: 800, p99: 1900, max: 2000, mean: 300 },
    non2xx: 0,
    unexpected: 0,
    errors: { connect: 0, read: 0, write: 0, timeout: 0 },
    badSample: null,
    kinds: [
      { name: flood.kind, sent: counts.sent, matched: counts.served, taken: 0 },
      { name: shedKindName(flood), sent: 0, matched: counts.shed, taken: 0 },
    ],
    exhausted: null,
    ...extra,
  };
}

t.test('the flood sends its request only; its shed answer is a kind that is never sent', async (t) => {
  const kinds = backgroundKinds(flood);
  t.equal(kinds.length, 2);
  const [sent, shed] = kinds;
  t.match(sent, { name: 'signin_flood', weight: 1, expect: { status: 200, bodyPrefix: '{"access_token":"' } });
  t.match(sent?.request, { method: 'POST', path: '/connect/token' });
  t.match(sent?.request.body, 'grant_type=password');
  t.match(shed, { name: 'signin_flood_shed', weight: 0, expect: { status: 503, bodyPrefix: '{"error":"temporarily_unavailable"' } });
  t.ok(flood.connections > 260, 'more connections than the password lane holds by default (4 running, 256 waiting)');
});

t.test('served and shed answers are counted apart, and neither voids the run', async (t) => {
  const round = backgroundRound(
    flood,
    floodResult({ sent: 40_510, served: 700, shed: 39_300 }, { errors: { connect: 0, read: 2, write: 0, timeout: 30 } }),
    0.4,
  );
  t.match(round, {
    name: 'sign-in flood',
    connections: flood.connections,
    answered: 700,
    shed: 39_300,
    unexpected: 0,
    unanswered: 510,
    timeouts: 30,
    socketErrors: 2,
    loadgenCores: 0.4,
    problem: null,
  });
});

t.test('what voids the run', async (t) => {
  const wrong = backgroundRound(
    flood,
    floodResult({ sent: 1_000, served: 100, shed: 890 }, { non2xx: 10, badSample: '400 {"error":"invalid_grant"}' }),
    null,
  );
  t.equal(wrong.unexpected, 10);
  t.match(wrong.problem, /10 answers that were neither served \(200\) nor shed \(503\) \(first: 400 \{"error":"invalid_grant"\}\)/);

  const nothing = backgroundRound(flood, floodResult({ sent: 512, served: 0, shed: 0 }), null);
  t.match(nothing.problem, /got no answer it expects/);
  t.equal(nothing.unanswered, 512);

  const astray = backgroundRound(flood, floodResult({ sent: 10_000, served: 100, shed: 8_000 }), null);
  t.match(astray.problem, /sent 10000 requests but got 8100 answers/);
  const inFlight = backgroundRound(flood, floodResult({ sent: 8_100 + flood.connections + 1, served: 100, shed: 8_000 }), null);
  t.equal(inFlight.problem, null, 'up to one request per connection in flight at the end');
});

function round(n: number, p99: number, background: BackgroundRound | null, valid = true): RoundResult {
  return roundResult({ n, p99, valid, background });
}

function contender(
  kind: 'tessera' | 'baseline',
  store: 'memory' | 'redis',
  s: Summary | null,
  loaded: boolean,
  rounds: RoundResult[] = [],
): ContenderResult {
  const alone = `${kind}/${store}`;
  const name = `${kind === 'baseline' ? 'Tessera baseline' : 'Tessera'} (${store})`;
  return {
    id: loaded ? `${alone}+signin_flood` : alone,
    label: loaded ? `${name} + sign-in flood` : name,
    kind,
    store,
    detail: {},
    kinds: [],
    rounds,
    summary: s,
    memory: { idleRssBytes: null, afterRssBytes: null, peakRssBytes: null },
    error: s === null ? 'could not start' : null,
    ...(loaded ? { background: 'sign-in flood', alone } : {}),
  };
}

const run = (answered: number, shed: number, timeouts: number): BackgroundRound =>
  backgroundRound(
    flood,
    floodResult(
      { sent: answered + shed, served: answered, shed },
      { durationS: 10, errors: { connect: 0, read: 0, write: 0, timeout: timeouts } },
    ),
    0.5,
  );

const alone = contender('tessera', 'memory', summary(20_000, { latencyMs: { p50: 2, p90: 3, p99: 5, max: 9, mean: 2 } }), false);
const loaded = contender(
  'tessera',
  'memory',
  summary(8_000, { latencyMs: { p50: 6, p90: 12, p99: 40, max: 90, mean: 7 } }),
  true,
  // The invalid round's flood figures are left out.
  [round(1, 40, run(1_300, 150_000, 20)), round(2, 40, run(1_200, 170_000, 40)), round(3, 40, run(0, 10, 0), false)],
);

t.test('a contender under the flood is compared with itself alone', async (t) => {
  const comparisons = underLoadComparisons([alone, loaded]);
  t.equal(comparisons.length, 1, 'one per contender under the load');
  t.match(comparisons[0], {
    background: 'sign-in flood',
    loaded: 'tessera/memory+signin_flood',
    alone: 'tessera/memory',
    loadedRps: 8_000,
    aloneRps: 20_000,
    loadedLatencyMs: { p99: 40 },
    aloneLatencyMs: { p99: 5 },
    backgroundPerRun: {
      connections: flood.connections,
      answeredPerS: 125,
      shedPerS: 16_000,
      timeouts: 30,
      socketErrors: 0,
      loadgenCores: 0.5,
    },
  });
  t.same(underLoadComparisons([alone]), [], 'nothing without a contender under the load');
  t.same(underLoadComparisons([contender('tessera', 'memory', null, false), loaded]), [], 'nothing when the alone run failed');
  t.same(underLoadComparisons([alone, contender('tessera', 'memory', null, true)]), [], 'nor when the loaded one did');
});

t.test('the line below the table puts the percentiles side by side, with the flood figures', async (t) => {
  const contenders = [alone, loaded];
  const [comparison] = underLoadComparisons(contenders);
  t.equal(
    formatUnderLoad(comparison!, contenders),
    'Tessera (memory) alone → under the sign-in flood: **p50 2.00 → 6.00 ms (3.0x), p90 3.00 → 12.0 ms (4.0x), p99 5.00 → 40.0 ms (8.0x)**; ' +
      `req/s 20,000 → 8,000 (0.4x); the sign-in flood (${flood.connections} connections, per measured run): 125 answered/s, 16,000 shed/s, 30 timed out (2 s), 0 socket errors, its load generator 50% CPU`,
  );
  const report = formatScenario({
    name: 'client_credentials_signin_flood',
    measures: 'm',
    contenders,
    ratios: [],
    underLoad: underLoadComparisons(contenders),
    notes: [],
    hasErrors: false,
  });
  t.match(report, /^\| Tessera \(memory\) \+ sign-in flood \| 8,000 \|/m, 'its own row');
  t.match(report, /^- Tessera \(memory\) alone → under the sign-in flood: /m);
  t.match(
    report,
    /sign-in flood, round 1: 151,300 answers in 10 s, 1,300 served, 150,000 shed, 0 unexpected, 20 timed out, 0 unanswered at the end, latency p50 1\.00 p99 1900 ms;/,
  );
  t.notMatch(report, /round 1: [^;]*no request served/);
  t.match(report, /round 3: [^;]*0 served, [^;]*\(no request served in the whole run: only its sheds loaded the server\)/);
});

t.test('with a baseline, each checkout is compared with the other under the same load', async (t) => {
  const contenders = [
    contender('tessera', 'memory', summary(20_000), false),
    contender('tessera', 'memory', summary(8_000), true),
    contender('baseline', 'memory', summary(10_000), false),
    contender('baseline', 'memory', summary(4_000), true),
  ];
  const comparisons = baselineComparisons(contenders);
  t.match(comparisons, [
    { tessera: 'tessera/memory', baseline: 'baseline/memory', rps: 2 },
    { tessera: 'tessera/memory+signin_flood', baseline: 'baseline/memory+signin_flood', rps: 2 },
  ]);
});
