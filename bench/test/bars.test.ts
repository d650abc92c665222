/** Issue 33's bars judged on a run's results (bench/report/bars.ts): each can be met, not met, or not measured. */
import t from 'tap';
import { formatBars, judgeBars, otherGrants } from '../report/bars.js';
import type { BenchResults, ContenderResult, FloorRow, RatioResult, RoundResult, ScenarioResult, Summary } from '../report/results.js';
import { benchResults, contenderResult, roundResult, summary } from './summary_fixture.js';

const contender = contenderResult;

/** A row 100 µs over a new floor of 100 / `multiple`… : figure 100 × new multiple, new floor 100, old floor 80. */
const row = (id: string, multiple: number, newFloor = true): FloorRow => ({
  contender: id,
  floorUs: 80,
  figureUs: 100 * multiple,
  multiple: (100 * multiple) / 80,
  newFloorUs: newFloor ? 100 : null,
  newMultiple: newFloor ? multiple : null,
  handoffUs: newFloor ? 15 : null,
  bridgeUs: null,
});

/** A scenario on both stores with the given multiples of its new floor. */
function scenario(name: string, multiples: { memory?: number; redis?: number }, parts: Partial<ScenarioResult> = {}): ScenarioResult {
  const stores = (['memory', 'redis'] as const).filter((s) => multiples[s] !== undefined);
  return {
    name,
    measures: '',
    contenders: stores.map((store) =>
      contender(
        `tessera/${store}`,
        'tessera',
        store,
        summary(10_000, { serverUsPerRequest: 100 * (multiples[store] as number), storeUsPerRequest: 0 }),
      ),
    ),
    ratios: [],
    notes: [],
    hasErrors: false,
    floor: {
      declared: { signatures: { ES256: 1 }, verifications: {}, store: [{ command: { op: 'get', bytes: 0 }, count: 1 }] },
      breakdown: null,
      rows: stores.map((store) => row(`tessera/${store}`, multiples[store] as number)),
    },
    ...parts,
  };
}

const results = (scenarios: ScenarioResult[]): BenchResults => benchResults({ scenarios });
const verdicts = (r: BenchResults): (boolean | null)[] => judgeBars(r).map((b) => b.met);

t.test('client_credentials: ≤ 1.3x its new floor on both stores, the old multiple beside it', async (t) => {
  const [met] = judgeBars(results([scenario('client_credentials', { memory: 1.2, redis: 1.3 })]));
  t.equal(met?.met, true);
  t.match(met?.bar, /client_credentials ≤ 1\.3x its new floor on both stores/);
  t.match(
    met?.figures,
    /^tessera\/memory 1\.20x \(120 \/ 100 µs; old floor 1\.50x\), tessera\/redis 1\.30x \(130 \/ 100 µs; old floor 1\.63x\)$/,
  );
  const [over] = judgeBars(results([scenario('client_credentials', { memory: 1.2, redis: 1.31 })]));
  t.equal(over?.met, false, 'one row above 1.3x');
  t.match(over?.figures, /1\.31x \(131 \/ 100 µs; old floor 1\.64x\) ✗/);
  const oneStore = judgeBars(results([scenario('client_credentials', { memory: 1.2 })]))[0];
  t.equal(oneStore?.met, null, 'not measured on Redis: not judged');
  t.match(oneStore?.figures, /not measured on redis$/);
  const noHandoff = scenario('client_credentials', { memory: 1.2, redis: 1.2 });
  noHandoff.floor!.rows = [row('tessera/memory', 1.2, false), row('tessera/redis', 1.2)];
  const [unmeasured] = judgeBars(results([noHandoff]));
  t.equal(unmeasured?.met, null, 'without the hand-off, no new floor: not measured, never met on the old one');
  t.match(unmeasured?.figures, /tessera\/memory not measured \(its hand-off or bridge was not measured; old floor 1\.50x\)/);
  t.equal(judgeBars(results([]))[0]?.met, null, 'not measured without the scenario');
});

t.test('every other grant scenario ≤ 1.4x its new floor on both stores', async (t) => {
  t.same(otherGrants, [
    'refresh_token',
    'authorization_code',
    'device_code',
    'delegation',
    'token_exchange',
    'introspection',
    'client_credentials_private_key_jwt',
  ]);
  const all = otherGrants.map((name) => scenario(name, { memory: 1.35, redis: 1.4 }));
  t.equal(verdicts(results(all))[1], true);
  const oneOver = all.map((s) => (s.name === 'device_code' ? scenario('device_code', { memory: 1.45, redis: 1.2 }) : s));
  const [, missed] = judgeBars(results(oneOver));
  t.equal(missed?.met, false, '1.45x was within the old 1.6x bar, not this one');
  t.match(missed?.figures, /device_code: tessera\/memory 1\.45x \(145 \/ 100 µs; old floor 1\.81x\) ✗/);
  t.equal(verdicts(results(all.slice(1)))[1], null, 'refresh_token not measured');
  t.match(judgeBars(results(all.slice(1)))[1]?.figures, /not measured: refresh_token$/);
  const redisOnly = all.map((s) => (s.name === 'delegation' ? scenario('delegation', { redis: 1.2 }) : s));
  t.equal(verdicts(results(redisOnly))[1], null, 'a grant measured on one store only');
  t.equal(verdicts(results(oneOver.slice(1)))[1], false, 'a failure is a failure, measured or not the rest');
  t.equal(verdicts(results([...all, scenario('password', { memory: 9, redis: 9 })]))[1], true, 'the password scenario has no bar');
  const negative = all.map((s) => (s.name === 'introspection' ? scenario('introspection', { memory: -0.5, redis: 1.2 }) : s));
  t.equal(verdicts(results(negative))[1], null, 'nothing left once the excluded work is off: not measured');
});

t.test('refresh_token on Redis at least 3.5x the peer on Redis', async (t) => {
  const withPeer = (tesseraRps: number): ScenarioResult => {
    const base = scenario('refresh_token', { memory: 1.3, redis: 1.3 });
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
  const [, , met] = judgeBars(results([withPeer(3_600)]));
  t.equal(met?.met, true, '3.6x: below the retired 5x, above 3.5x');
  t.match(met?.bar, /≥ 3\.5x node-oidc-provider on Redis/);
  t.match(met?.figures, /^3\.6x \(rounds: 3\.6x\): 3,600 against 1,000 req\/s$/);
  t.equal(verdicts(results([withPeer(3_400)]))[2], false);
  const loaded = withPeer(3_600);
  loaded.contenders[1] = contender('tessera/redis', 'tessera', 'redis', summary(3_600, { loadgenCores: 0.2 }));
  t.match(
    judgeBars(results([loaded]))[2]?.figures,
    /3\.5x the peer is 3,500 req\/s, .* \(.* req\/s: 100 µs \+ 55\.6 µs of load generator a request, every core busy\)/,
    'against what the new floor (100 µs, not the old 80) allows',
  );
  t.equal(verdicts(results([scenario('refresh_token', { memory: 1, redis: 1 })]))[2], null, 'no peer in the run');
});

t.test("p99 at or under the peer's in every scenario where the peer runs", async (t) => {
  const latency = (p99: number): Partial<Summary> => ({ latencyMs: { p50: 1, p90: 2, p99, max: 100, mean: 1 } });
  const run = (tesseraP99: number): BenchResults =>
    results([
      {
        ...scenario('client_credentials', { memory: 1, redis: 1 }),
        contenders: [
          contender('tessera/memory', 'tessera', 'memory', summary(20_000, latency(tesseraP99))),
          // The events twin is not compared.
          {
            ...contender('tessera/memory+events-file', 'tessera', 'memory', summary(20_000, latency(99))),
            events: 'file',
            eventsOff: 'tessera/memory',
          },
          contender('peer', 'peer', null, summary(4_000, latency(40))),
        ],
      },
      {
        ...scenario('refresh_token', { memory: 1, redis: 1 }),
        contenders: [
          contender('tessera/redis', 'tessera', 'redis', summary(7_000, latency(20))),
          contender('peer/memory', 'peer', 'memory', summary(3_000, latency(10))),
          contender('peer/redis', 'peer', 'redis', summary(2_000, latency(30))),
        ],
      },
    ]);
  const [, , , met] = judgeBars(run(40));
  t.equal(met?.met, true, 'equal is at or under');
  t.match(
    met?.figures,
    /^client_credentials, tessera\/memory 40\.0 vs peer 40\.0 ms; refresh_token, tessera\/redis 20\.0 vs peer\/redis \(redis\) 30\.0 ms$/,
  );
  t.equal(verdicts(run(41))[3], false);
  t.equal(verdicts(results([]))[3], null);
});

t.test('audit events on ≤ 10% more CPU per client_credentials request than off, from the interleaved rounds', async (t) => {
  const rounds = (us: number[], redisUs = 0): RoundResult[] =>
    us.map((serverUs, i) => {
      const r = roundResult({ n: i + 1 });
      return { ...r, cpu: { ...r.cpu, serverUsPerRequest: serverUs, storeUsPerRequest: redisUs } };
    });
  const pair = (off: number[], on: number[], store: 'memory' | 'redis' = 'memory'): ContenderResult[] => [
    { ...contender(`tessera/${store}`, 'tessera', store, summary(10_000, { serverUsPerRequest: off[0] ?? null })), rounds: rounds(off) },
    {
      ...contender(`tessera/${store}+events-file`, 'tessera', store, summary(9_000, { serverUsPerRequest: on[0] ?? null })),
      rounds: rounds(on),
      events: 'file',
      eventsOff: `tessera/${store}`,
    },
  ];
  const cc = (contenders: ContenderResult[]): BenchResults =>
    results([{ ...scenario('client_credentials', { memory: 1.2, redis: 1.2 }), contenders }]);
  const [, , , , met] = judgeBars(cc([...pair([100, 120, 100], [108, 150, 109]), ...pair([200, 200], [215, 221], 'redis')]));
  t.equal(met?.met, true, 'the median of each round’s ratio: 1.09 on each store');
  t.match(met?.bar, /audit events on ≤ 10% more CPU per client_credentials request than events off, interleaved/);
  t.match(
    met?.figures,
    /tessera\/memory\+events-file \+9\.0% \(108 vs 100 µs\/req; rounds: 1\.080x, 1\.250x, 1\.090x\); tessera\/redis\+events-file \+9\.0%/,
  );
  const [, , , , over] = judgeBars(cc(pair([100, 100], [111, 112])));
  t.equal(over?.met, false);
  t.match(over?.figures, /\+11\.5% .* ✗$/);
  const invalid = pair([100], [105]);
  invalid[0]!.rounds = [{ ...invalid[0]!.rounds[0]!, valid: false }];
  t.equal(judgeBars(cc(invalid))[4]?.met, null, 'no round with both rows valid');
  const none = judgeBars(results([scenario('client_credentials', { memory: 1, redis: 1 })]))[4];
  t.equal(none?.met, null);
  t.match(none?.figures, /run with --events-beside file/);
  const twinRows = cc([...pair([100], [150]), ...pair([100], [150], 'redis')]);
  const cc0 = twinRows.scenarios[0]!;
  cc0.floor!.rows = [...cc0.floor!.rows, row('tessera/memory+events-file', 5)];
  t.equal(verdicts(twinRows)[0], true, 'the twin is not one of the floor bar’s rows');
});

t.test('one line per bar, in the order of the issue, each met, NOT MET or not measured', async (t) => {
  const text = formatBars(judgeBars(results([scenario('client_credentials', { memory: 1.2, redis: 1.2 })])));
  const lines = text.split('\n');
  t.equal(lines[0], "### Issue 33's bars (this run)");
  t.equal(lines.length, 7);
  t.match(lines[2], /^- \*\*met\*\*: client_credentials ≤ 1\.3x its new floor on both stores\. /);
  t.match(lines[3], /^- \*\*not measured\*\*: every other grant scenario ≤ 1\.4x its new floor on both stores/);
  t.match(lines[4], /^- \*\*not measured\*\*: refresh_token on Redis ≥ 3\.5x node-oidc-provider on Redis in req\/s\. /);
  t.match(lines[5], /^- \*\*not measured\*\*: p99 at or under the peer's wherever a peer runs\. no peer ran in this run$/);
  t.match(lines[6], /^- \*\*not measured\*\*: audit events on ≤ 10% more CPU/);
  const failed = formatBars(judgeBars(results([scenario('client_credentials', { memory: 1.5, redis: 1.2 })])));
  t.match(failed.split('\n')[2], /^- \*\*NOT MET\*\*: client_credentials/);
});
