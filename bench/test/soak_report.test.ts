// The soak's pure parts (bench/report/soak.ts, bench/soak/classify.ts, http_answer.ts,
// soak_kinds.ts): phases, percentiles, the verdict and the report.
import t from 'tap';
import {
  answeredShare,
  formatShare,
  formatSoak,
  latencyFigures,
  mergeWindows,
  percentile,
  soakFailures,
  splitByBursts,
  type SoakResults,
} from '../report/soak.js';
import { classify, emptyCount, type TrafficCount } from '../soak/classify.js';
import { requestBytes, takeAnswer } from '../soak/http_answer.js';
import { splitBurst } from '../soak/soak_kinds.js';

const count = (name: string, fields: Partial<TrafficCount>): TrafficCount => ({ ...emptyCount(name), ...fields });

function results(overrides: Partial<Omit<SoakResults, 'failures'>> = {}): Omit<SoakResults, 'failures'> {
  return {
    settings: {
      durationS: 300,
      connections: 64,
      rate: 1000,
      burstSize: 2000,
      burstEveryS: 10,
      deadlineMs: 30_000,
      steadyShares: { client_credentials: 60, refresh_token: 40 },
      burstShares: { client_credentials: 50, device_authorization: 50 },
    },
    steady: [count('client_credentials', { sent: 600, served: 600 }), count('refresh_token', { sent: 400, served: 390, refused: 10 })],
    bursts: [
      count('client_credentials', { sent: 1000, served: 1000 }),
      count('device_authorization', { sent: 1000, served: 700, refused: 300 }),
    ],
    burstWindows: [{ startMs: 10_000, endMs: 12_000 }],
    strayAnswers: 0,
    exhausted: null,
    phases: {
      steadyBetween: latencyFigures([1, 2, 3]),
      steadyDuring: latencyFigures([10, 20]),
      burst: latencyFigures([100, 200, 300]),
    },
    gauges: { inFlight: 0, queueDepth: 0 },
    rss: { startBytes: 100 * 1024 ** 2, endBytes: 120 * 1024 ** 2, peakBytes: 150 * 1024 ** 2 },
    ...overrides,
  };
}

t.test('overlapping burst windows merge, and the rest stay apart in order', async (t) => {
  t.same(
    mergeWindows([
      { startMs: 30, endMs: 40 },
      { startMs: 0, endMs: 10 },
      { startMs: 5, endMs: 20 },
    ]),
    [
      { startMs: 0, endMs: 20 },
      { startMs: 30, endMs: 40 },
    ],
  );
});

t.test('a steady answer is "during" when its request was in flight at any moment of a burst', async (t) => {
  const windows = [
    { startMs: 1000, endMs: 2000 },
    { startMs: 5000, endMs: 6000 },
  ];
  const split = splitByBursts(
    [
      { endMs: 900, latencyMs: 1 }, // before the first burst
      { endMs: 1001, latencyMs: 2 }, // answered just after the burst began
      { endMs: 2100, latencyMs: 200 }, // sent inside the burst, answered after it
      { endMs: 2100, latencyMs: 50 }, // sent after the burst ended
      { endMs: 7000, latencyMs: 3000 }, // spans the whole second burst
      { endMs: 8000, latencyMs: 5 }, // after both
    ],
    windows,
  );
  t.same(split.during, [2, 200, 3000]);
  t.same(split.between, [1, 50, 5]);
  t.same(splitByBursts([{ endMs: 10, latencyMs: 1 }], []), { between: [1], during: [] }, 'no bursts: all between');
});

t.test('p99 is the nearest rank: the 99th of 100 values, the largest of fewer', async (t) => {
  const hundred = Array.from({ length: 100 }, (_, i) => 100 - i);
  t.equal(percentile(hundred, 99), 99);
  t.equal(percentile(hundred, 50), 50);
  t.equal(percentile([5, 1, 3], 99), 5);
  t.equal(percentile([], 99), null);
  t.same(latencyFigures([3, 1, 2]), { requests: 3, p50: 2, p99: 3, max: 3 });
  t.same(latencyFigures([]), { requests: 0, p50: null, p99: null, max: null });
});

t.test('the verdict: passes when every request is answered once and the gauges are 0', async (t) => {
  t.same(soakFailures(results()), []);
});

t.test('the verdict fails on anything lost, wrong, doubled or left in the gateway, and says which grant', async (t) => {
  const lost = soakFailures(
    results({ bursts: [count('refresh_token', { sent: 500, served: 497, unanswered: 3, sample: 'no answer within 30000 ms' })] }),
  );
  t.same(lost, ['bursts, refresh_token: 3 of 500 unanswered (first: no answer within 30000 ms)']);
  t.match(soakFailures(results({ steady: [count('introspection', { sent: 10, served: 9, wrong: 1, sample: '500 {}' })] })), [
    /steady load, introspection: 1 answered neither as expected nor 503 \+ Retry-After \(first: 500 \{\}\)/,
  ]);
  t.match(soakFailures(results({ bursts: [count('client_credentials', { sent: 10, served: 10, answeredTwice: 2 })] })), [
    /2 answered twice/,
  ]);
  t.same(soakFailures(results({ gauges: { inFlight: 3, queueDepth: 0 } })), [
    'tessera_worker_requests_in_flight is 3 after the traffic stopped',
  ]);
  t.same(soakFailures(results({ gauges: { inFlight: 0, queueDepth: null } })), [
    'tessera_worker_queue_depth is unreadable after the traffic stopped',
  ]);
  t.match(soakFailures(results({ exhausted: 'refresh_token' })), [/refresh_token feed ran out/]);
  t.match(soakFailures(results({ strayAnswers: 1 })), [/1 answers to no outstanding request/]);
  t.match(soakFailures(results({ burstWindows: [] })), [/no burst was fired/]);
  t.match(soakFailures(results({ steady: [], bursts: [] })), [/nothing was sent/]);
});

t.test('the answered share never rounds a loss up to 100%', async (t) => {
  t.equal(answeredShare(count('x', { sent: 200_000, served: 199_999 })), 99.9995);
  t.equal(formatShare(99.9995), '99.99');
  t.equal(formatShare(100), '100.00');
  t.equal(formatShare(null), '–');
});

t.test('the report: a row per kind and totals, the three phases, gauges, RSS and the verdict', async (t) => {
  const passed = { ...results(), failures: [] };
  const text = formatSoak(passed);
  t.match(text, '### soak: mixed load on Redis with a burst of 2,000 connections every 10 s (300 s)');
  t.match(text, '| steady · refresh_token | 400 | 390 | 10 | 0 | 0 | 0 | 100.00% |');
  t.match(text, '| **bursts** | 2,000 | 1,700 | 300 | 0 | 0 | 0 | 100.00% |');
  t.match(text, '| **all** | 3,000 | 2,690 | 310 | 0 | 0 | 0 | 100.00% |');
  t.match(text, '| steady load, between bursts | 3 | 2.00 | 3.00 | 3.00 |');
  t.match(text, '| steady load, during bursts | 2 | 10.0 | 20.0 | 20.0 |');
  t.match(text, '| burst connections (connect to answer) | 3 | 200 | 300 | 300 |');
  t.match(text, 'tessera_worker_requests_in_flight **0**, tessera_worker_queue_depth **0**');
  t.match(text, 'RSS 100.0 MiB at start, 120.0 MiB at the end (peak 150.0 MiB)');
  t.match(text, '**PASSED**: 100.00% answered (3,000 of 3,000), gauges at 0.');
  t.notMatch(text, 'First refusal', 'no refusal line without a refusal sample');
  const refused = formatSoak({
    ...passed,
    bursts: [count('device_authorization', { sent: 10, served: 2, refused: 8, refusedSample: '503 {"error":"temporarily_unavailable"}' })],
  });
  t.match(refused, 'First refusal of each kind refused:\n\n- bursts · device_authorization: 503 {"error":"temporarily_unavailable"}');
  const failed = formatSoak({ ...passed, failures: ['bursts, refresh_token: 3 of 500 unanswered'] });
  t.match(failed, '**FAILED**:\n- bursts, refresh_token: 3 of 500 unanswered');
  t.notMatch(failed, 'PASSED');
});

t.test('an answer is served when it meets its kind, refused when 503 + Retry-After, else wrong', async (t) => {
  const expect = { status: 200, bodyPrefix: '{"access_token":"' };
  t.equal(classify(expect, { status: 200, retryAfter: undefined, body: '{"access_token":"x"}' }), 'served');
  t.equal(classify(expect, { status: 503, retryAfter: '2', body: '{"error":"temporarily_unavailable"}' }), 'refused');
  t.equal(classify(expect, { status: 503, retryAfter: undefined, body: '{}' }), 'wrong', 'a 503 without Retry-After');
  t.equal(classify(expect, { status: 200, retryAfter: undefined, body: '{"error":"x"}' }), 'wrong');
  t.equal(classify(expect, { status: 400, retryAfter: '1', body: '{}' }), 'wrong');
});

t.test('raw HTTP: a request in one write, and answers read off a connection one at a time', async (t) => {
  const bytes = requestBytes(
    { method: 'POST', path: '/connect/token', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } },
    'grant_type=client_credentials&scope=é',
    8080,
  ).toString('latin1');
  t.match(bytes, /^POST \/connect\/token HTTP\/1\.1\r\nHost: 127\.0\.0\.1:8080\r\n/);
  // 36 ASCII bytes and the two of é in UTF-8: the length counts bytes, not characters.
  t.match(bytes, 'Content-Length: 38\r\n\r\ngrant_type=client_credentials&scope=');
  const two = Buffer.from(
    'HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel',
  );
  const first = takeAnswer(two);
  t.same(first && { status: first.status, retryAfter: first.retryAfter, body: first.body }, { status: 503, retryAfter: '2', body: '{}' });
  t.equal(takeAnswer(two.subarray(first?.length ?? 0)), undefined, 'the second is not complete yet');
  t.equal(takeAnswer(Buffer.from('HTTP/1.1 200 OK\r\nContent-Le')), undefined);
});

t.test('a burst is split by share, the rounding left-over going to the first kind', async (t) => {
  t.same(splitBurst(2000, [40, 25, 15, 10, 10]), [800, 500, 300, 200, 200]);
  t.same(splitBurst(7, [1, 1, 1]), [3, 2, 2]);
  t.equal(
    splitBurst(199, [40, 25, 15, 10, 10]).reduce((a, b) => a + b, 0),
    199,
  );
});
