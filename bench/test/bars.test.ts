/** Issue 18's bars judged on a run's results (bench/report/bars.ts): each can be met, missed, or not judged. */
import t from 'tap';
import { formatBars, judgeBars, otherGrants } from '../report/bars.js';
import type { BenchResults, FloorRow, RatioResult, ScenarioFloor, ScenarioResult, Summary, ThroughputBound } from '../report/results.js';
import { benchResults, contenderResult, summary } from './summary_fixture.js';

const contender = contenderResult;

const row = (id: string, multiple: number): FloorRow => ({ contender: id, floorUs: 100, figureUs: 100 * multiple, multiple });

/** A scenario on both stores with the given multiples of its floor; `store`: whether its request uses the store. */
function scenario(
  name: string,
  multiples: { memory: number; redis: number },
  parts: Partial<ScenarioResult> = {},
  store = true,
): ScenarioResult {
  return {
    name,
    measures: '',
    contenders: [
      contender('tessera/memory', 'tessera', 'memory', summary(10_000, { serverUsPerRequest: 100 * multiples.memory })),
      contender('tessera/redis', 'tessera', 'redis', summary(10_000, { serverUsPerRequest: 100 * multiples.redis, storeUsPerRequest: 0 })),
    ],
    ratios: [],
    notes: [],
    hasErrors: false,
    floor: {
      declared: { signatures: { ES256: 1 }, verifications: {}, store: store ? [{ command: { op: 'get', bytes: 0 }, count: 1 }] : [] },
      breakdown: null,
      rows: [row('tessera/memory', multiples.memory), row('tessera/redis', multiples.redis)],
    },
    ...parts,
  };
}

const bound = (tesseraRps: number): ThroughputBound => ({
  cores: 2,
  signUs: 25,
  httpUs: 10,
  loadgenUs: 5,
  boundRps: 50_000,
  tesseraRps,
  peerRps: null,
});

function results(scenarios: ScenarioResult[], bound: ThroughputBound | null = null): BenchResults {
  return benchResults({ scenarios, bound });
}

const verdicts = (r: BenchResults): (boolean | null)[] => judgeBars(r).map((b) => b.met);

t.test('client_credentials: every row within 1.3x of its floor and 75% of the bound', async (t) => {
  const [met] = judgeBars(results([scenario('client_credentials', { memory: 1.2, redis: 1.3 }, {}, false)], bound(40_000)));
  t.equal(met?.met, true);
  t.match(
    met?.figures,
    /tessera\/memory 1\.20x \(120 \/ 100 µs\), tessera\/redis 1\.30x \(130 \/ 100 µs\); 40,000 req\/s = 80% of the bound 50,000$/,
  );
  const [slowRow] = judgeBars(results([scenario('client_credentials', { memory: 1.2, redis: 1.31 }, {}, false)], bound(40_000)));
  t.equal(slowRow?.met, false, 'one row above 1.3x');
  t.match(slowRow?.figures, /1\.31x \(131 \/ 100 µs\) ✗/);
  const [belowBound] = judgeBars(results([scenario('client_credentials', { memory: 1.2, redis: 1.2 }, {}, false)], bound(37_000)));
  t.equal(belowBound?.met, false, '74% of the bound');
  const [noBound] = judgeBars(results([scenario('client_credentials', { memory: 1.2, redis: 1.2 }, {}, false)]));
  t.equal(noBound?.met, null, 'not judged without the bound');
  t.equal(judgeBars(results([]))[0]?.met, null, 'not judged without the scenario');
});

t.test('every other grant within 1.6x; a grant left out of the run leaves the bar unjudged unless one already failed', async (t) => {
  const all = otherGrants.map((name) => scenario(name, { memory: 1.5, redis: 1.6 }));
  t.equal(verdicts(results(all))[1], true);
  const oneOver = all.map((s) => (s.name === 'device_code' ? scenario('device_code', { memory: 1.7, redis: 1.2 }) : s));
  const [, missed] = judgeBars(results(oneOver));
  t.equal(missed?.met, false);
  t.match(missed?.figures, /device_code: tessera\/memory 1\.70x \(170 \/ 100 µs\) ✗/);
  t.equal(verdicts(results(all.slice(1)))[1], null, 'refresh_token not measured');
  t.match(judgeBars(results(all.slice(1)))[1]?.figures, /not measured: refresh_token$/);
  t.equal(verdicts(results(oneOver.slice(1)))[1], false, 'a failure is a failure, measured or not the rest');
  t.equal(verdicts(results([scenario('mixed', { memory: 9, redis: 9 })]))[1], null, 'the mix is not one of them');
  // Password minus its 14 ms hash is within the hash's measuring spread: judged on the cheap-hash scenario.
  t.ok(otherGrants.includes('password_cheap_hash'));
  t.notOk(otherGrants.includes('password'));
  const withPassword = [...all, scenario('password', { memory: 9, redis: 9 })];
  t.equal(verdicts(results(withPassword))[1], true, 'the password scenario prints its multiples without a bar');
});

t.test('a row minus its excluded work at or below zero is not judged, and cannot meet the bar', async (t) => {
  const all = otherGrants.map((name) => scenario(name, { memory: 1.5, redis: 1.6 }));
  // Rows of a run where the hash measured apart cost more than the whole request.
  const noisy = all.map((s) => (s.name === 'password_cheap_hash' ? scenario('password_cheap_hash', { memory: -16.36, redis: 1.2 }) : s));
  const [, bar] = judgeBars(results(noisy));
  t.equal(bar?.met, null, 'not met, not missed: not judged');
  t.match(bar?.figures, /password_cheap_hash: tessera\/memory not judged \(-1,636 µs once the work measured apart is taken off/);
  t.match(bar?.figures, /tessera\/redis 1\.20x \(120 \/ 100 µs\)$/);
  const andAFailure = noisy.map((s) => (s.name === 'delegation' ? scenario('delegation', { memory: 1.7, redis: 1.2 }) : s));
  t.equal(verdicts(results(andAFailure))[1], false, 'a row over the bar still fails it');
  const ccNoisy = scenario('client_credentials', { memory: 0, redis: 1.2 }, {}, false);
  t.equal(judgeBars(results([ccNoisy], bound(40_000)))[0]?.met, null);
  t.equal(judgeBars(results([ccNoisy], bound(10_000)))[0]?.met, false, 'the bound alone can fail it');
});

t.test('the memory store never slower than Redis, where the request uses the store', async (t) => {
  const [, , faster] = judgeBars(results([scenario('refresh_token', { memory: 1.5, redis: 1.6 })]));
  t.equal(faster?.met, true);
  t.match(faster?.figures, /refresh_token 150 vs 160 \+ 0\.0 in redis-server \(1 of 1 met\)/);
  const [, , slower] = judgeBars(results([scenario('refresh_token', { memory: 1.7, redis: 1.6 })]));
  t.equal(slower?.met, false);
  t.match(slower?.figures, /refresh_token 170 vs 160 \+ 0\.0 in redis-server ✗ \(0 of 1 met\)/);
  const redisShare = scenario('refresh_token', { memory: 1.7, redis: 1.6 });
  redisShare.contenders[1] = contender(
    'tessera/redis',
    'tessera',
    'redis',
    summary(10_000, { serverUsPerRequest: 160, storeUsPerRequest: 20 }),
  );
  const [, , counted] = judgeBars(results([redisShare]));
  t.equal(counted?.met, true, "redis-server's share is part of the request's work on Redis");
  t.match(counted?.figures, /refresh_token 170 vs 160 \+ 20\.0 in redis-server \(1 of 1 met\)/);
  const noStore = scenario('client_credentials', { memory: 1.7, redis: 1.6 }, {}, false);
  t.equal(verdicts(results([noStore]))[2], null, 'client_credentials sends no store command: its two rows run the same code');
  const excluding = (
    name: string,
    multiples: { memory: number; redis: number },
    excludes: 'argon2id-verify' | 'argon2id-verify-cheap',
  ): ScenarioResult => {
    const base = scenario(name, multiples);
    const floor = base.floor as ScenarioFloor;
    return { ...base, floor: { ...floor, declared: { ...floor.declared, excludes } } };
  };
  const hashBound = excluding('password', { memory: 1.7, redis: 1.6 }, 'argon2id-verify');
  t.equal(verdicts(results([hashBound]))[2], null, "password's rows compare its hash's noise: not judged on their own");
  const cheap = excluding('password_cheap_hash', { memory: 1.5, redis: 1.6 }, 'argon2id-verify-cheap');
  const [, , onCheap] = judgeBars(results([hashBound, cheap]));
  t.equal(onCheap?.met, true, 'the grant is compared on password_cheap_hash');
  t.match(onCheap?.figures, /^memory vs Redis µs\/req: password_cheap_hash 150 vs 160 \+ 0\.0 in redis-server \(1 of 1 met\)$/);
});

t.test('refresh_token on Redis at least 5x the peer on Redis', async (t) => {
  const withPeer = (tesseraRps: number): ScenarioResult => {
    const base = scenario('refresh_token', { memory: 1.5, redis: 1.5 });
    const contenders = [
      contender('tessera/memory', 'tessera', 'memory', summary(tesseraRps)),
      contender('tessera/redis', 'tessera', 'redis', summary(tesseraRps)),
      contender('peer/memory', 'peer', 'memory', summary(1_000)),
      contender('peer/redis', 'peer', 'redis', summary(1_000)),
    ];
    const ratio = (tessera: string, peer: string): RatioResult => ({
      tessera,
      peer,
      rps: tesseraRps / 1_000,
      perRound: [tesseraRps / 1_000],
      tesseraUsPerRequest: null,
      peerUsPerRequest: null,
    });
    return { ...base, contenders, ratios: [ratio('tessera/memory', 'peer/memory'), ratio('tessera/redis', 'peer/redis')] };
  };
  const [, , , met] = judgeBars(results([withPeer(5_200)]));
  t.equal(met?.met, true);
  t.match(met?.figures, /^5\.2x \(rounds: 5\.2x\): 5,200 against 1,000 req\/s$/);
  t.equal(verdicts(results([withPeer(4_900)]))[3], false);
  const loaded = withPeer(5_200);
  loaded.contenders[1] = contender('tessera/redis', 'tessera', 'redis', summary(5_200, { loadgenCores: 0.2 }));
  t.match(
    judgeBars(results([loaded]))[3]?.figures,
    /^5\.2x \(rounds: 5\.2x\): 5,200 against 1,000 req\/s; 5x the peer is 5,000 req\/s, 35% of what the floor allows on 2 cores \(14,444 req\/s: 100 µs \+ 38\.5 µs of load generator a request, every core busy\); Tessera 36% of it$/,
    "what the bar asks, against the most the refresh's own floor allows with every core busy",
  );
  t.equal(verdicts(results([scenario('refresh_token', { memory: 1, redis: 1 })]))[3], null, 'no peer in the run');
});

t.test("p99 at or under the peer's on the same store, or a peer that keeps nothing", async (t) => {
  const latency = (p99: number): Partial<Summary> => ({ latencyMs: { p50: 1, p90: 2, p99, max: 100, mean: 1 } });
  const run = (tesseraP99: number): BenchResults =>
    results([
      {
        ...scenario('client_credentials', { memory: 1, redis: 1 }, {}, false),
        contenders: [
          contender('tessera/memory', 'tessera', 'memory', summary(20_000, latency(tesseraP99))),
          contender('peer', 'peer', null, summary(4_000, latency(40))),
        ],
      },
      {
        ...scenario('refresh_token', { memory: 1, redis: 1 }),
        contenders: [
          contender('tessera/redis', 'tessera', 'redis', summary(7_000, latency(20))),
          // Another store's peer is not compared: its p99 would fail the bar if it were.
          contender('peer/memory', 'peer', 'memory', summary(3_000, latency(10))),
          contender('peer/redis', 'peer', 'redis', summary(2_000, latency(30))),
        ],
      },
    ]);
  const [, , , , met] = judgeBars(run(40));
  t.equal(met?.met, true, 'equal is at or under');
  t.match(
    met?.figures,
    /^client_credentials, tessera\/memory 40\.0 vs peer 40\.0 ms; refresh_token, tessera\/redis 20\.0 vs peer\/redis \(redis\) 30\.0 ms$/,
  );
  t.equal(verdicts(run(41))[4], false);
  t.equal(verdicts(results([]))[4], null);
});

t.test('one line per bar, in the order of the issue', async (t) => {
  const text = formatBars(judgeBars(results([scenario('client_credentials', { memory: 1.2, redis: 1.2 }, {}, false)], bound(40_000))));
  const lines = text.split('\n');
  t.equal(lines[0], "### Issue 18's bars (this run)");
  t.equal(lines.length, 7);
  t.match(lines[2], /^- \*\*met\*\*: client_credentials ≤ 1\.3x its floor and ≥ 75% of the bound in req\/s\. /);
  t.match(lines[3], /^- \*\*not judged\*\*: every other grant scenario ≤ 1\.6x its floor/);
  t.match(
    lines[4],
    /^- \*\*not judged\*\*: the memory store never slower than Redis .*\. no scenario that uses the store ran on both stores$/,
  );
  t.match(lines[6], /^- \*\*not judged\*\*: p99 at or under the peer's wherever a peer runs\. no peer ran in this run$/);
});
