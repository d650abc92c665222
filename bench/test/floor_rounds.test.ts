/**
 * The floor measured in every round (bench/runner/floors.ts): the bare uWS endpoint runs as one
 * more contender of each scenario with a floor, and each row is judged round by round against the
 * floor of that round (bench/report/floors.ts), the median of the rounds' multiples.
 */
import t from 'tap';
import { floorCells, floorRowsByRound, formatFloor, hasMultiple, medianComponents, scenarioFloor } from '../report/floors.js';
import type { ContenderResult, FloorComponents, FloorComponentsRound, RoundResult } from '../report/results.js';
import type { LoadGenerator } from '../load/load_generator.js';
import { contendersOf } from '../runner/contenders.js';
import { formatFloorComponents } from '../runner/floors.js';
import { RunContext } from '../runner/context.js';
import { parseOptions } from '../runner/options.js';
import type { Progress } from '../runner/progress.js';
import { ceiling } from '../scenarios/ceiling.js';
import { oncePerRequest, storeCommandName, type RequestFloor } from '../scenarios/floor.js';
import { scenarios } from '../scenarios/index.js';
import type { ActiveScenario, ServerAccess } from '../scenarios/scenario.js';
import { cheapHashUser } from '../support/bench_config.js';
import { isPasswordHash, verifyPassword } from '../../core/crypto/password_hash.js';
import { contenderResult, roundResult, summary } from './summary_fixture.js';

const get = { op: 'get', bytes: 214 } as const;
const refresh: RequestFloor = { signatures: { ES256: 1 }, verifications: {}, store: oncePerRequest(get) };

/** One round's parts: a full JWT of `jwtUs`, a bare request of `httpUs`, GET at `getUs` (client) + 2 (redis-server). */
function parts(jwtUs: number, httpUs: number | null, getUs: number): FloorComponents {
  return {
    crypto: [{ alg: 'ES256', jwtSignUs: jwtUs, signUs: jwtUs - 5, verifyUs: 60 }],
    http: httpUs === null ? null : { usPerRequest: httpUs, rps: 90_000, source: 'round' },
    store: [{ name: storeCommandName(get), command: get, commands: 1_000, inFlight: 16, clientUs: getUs, redisUs: 2 }],
    hashUs: null,
  };
}

/** A measured round with its CPU figures. */
function measured(n: number, serverUs: number, redisUs: number | null = null, valid = true): RoundResult {
  const round = roundResult({ n, valid });
  return { ...round, cpu: { ...round.cpu, serverUsPerRequest: serverUs, storeUsPerRequest: redisUs } };
}

function withRounds(result: ContenderResult, rounds: RoundResult[]): ContenderResult {
  return { ...result, rounds };
}

t.test('every scenario with a floor runs the bare uWS endpoint last in each round, with the ceiling’s own request', async (t) => {
  const ctx = new RunContext(parseOptions([]), {} as LoadGenerator, { kind: 'source', note: null }, {} as Progress);
  t.teardown(() => ctx.close());
  const refreshScenario = scenarios.find((s): s is ActiveScenario => s.kind === 'active' && s.name === 'refresh_token');
  t.ok(refreshScenario?.floor, 'refresh_token declares a floor');
  const contenders = contendersOf(refreshScenario!, ctx);
  const last = contenders.at(-1)!;
  t.same([last.id, last.kind, last.label], ['uws-ceiling', 'ceiling', 'uWS trivial POST (floor)']);
  t.equal(contenders.filter((c) => c.kind === 'ceiling').length, 1, 'once');
  const noAccess = {} as ServerAccess;
  const [kind] = await last.requestKinds(noAccess);
  t.same(kind?.request, ceiling.plan?.request, 'the floor’s bare request, not a refresh');
  const own = contendersOf(ceiling, ctx);
  t.same(
    own.map((c) => [c.id, c.label]),
    [['uws-ceiling', 'uWS trivial POST']],
    'the ceiling scenario is its one contender',
  );
  const unfloored = { ...refreshScenario!, floor: undefined };
  t.notOk(
    contendersOf(unfloored, ctx).some((c) => c.kind === 'ceiling'),
    'no bare endpoint for a scenario without a floor',
  );
});

t.test('the floor printed is the median of each part over the rounds', async (t) => {
  const median = medianComponents([parts(30, 10, 8), parts(36, 14, 12), parts(33, null, 9)]);
  t.same(median.crypto, [{ alg: 'ES256', jwtSignUs: 33, signUs: 28, verifyUs: 60 }]);
  t.same(median.http, { usPerRequest: 12, rps: 90_000, source: 'round' }, 'a round without the bare request is left out');
  t.equal(median.store[0]?.clientUs, 9);
  t.equal(median.store[0]?.redisUs, 2);
  t.equal(median.store[0]?.commands, 3_000, 'every round’s commands');
  t.equal(medianComponents([parts(30, null, 8)]).http, null);
});

t.test('each row is judged round by round against that round’s floor; its multiple is their median', async (t) => {
  const rounds: FloorComponentsRound[] = [
    { round: 1, components: parts(30, 10, 8) }, // floor 40 µs; on Redis + 10 = 50
    { round: 2, components: parts(40, 20, 8) }, // floor 60 µs; on Redis 70
    { round: 3, components: parts(30, 10, 8) },
    { round: 4, components: parts(30, null, 8) }, // no bare request: no floor this round
  ];
  const memory = withRounds(contenderResult('tessera/memory', 'tessera', 'memory', summary(1)), [
    measured(1, 80),
    measured(2, 90),
    measured(3, 60),
    measured(4, 500),
  ]);
  const redis = withRounds(contenderResult('tessera/redis', 'tessera', 'redis', summary(1)), [
    measured(1, 90, 10),
    measured(2, 120, 20, false),
    measured(3, 65, 10),
  ]);
  const peer = withRounds(contenderResult('peer', 'peer', null, summary(1)), [measured(1, 400)]);
  const failed = contenderResult('tessera/failed', 'tessera', 'memory', null);
  const rows = floorRowsByRound(refresh, [memory, redis, peer, failed], rounds);
  t.same(
    rows.map((r) => [r.contender, r.perRound?.map((p) => [p.round, p.floorUs, p.figureUs, p.multiple])]),
    [
      [
        'tessera/memory',
        [
          [1, 40, 80, 2],
          [2, 60, 90, 1.5],
          [3, 40, 60, 1.5],
        ],
      ],
      [
        'tessera/redis',
        [
          [1, 50, 100, 2],
          [3, 50, 75, 1.5],
        ],
      ],
    ],
    'no peer; an invalid round and a round without its floor are left out',
  );
  t.same([rows[0]?.multiple, rows[0]?.floorUs, rows[0]?.figureUs], [1.5, 40, 80], 'medians, each of its own');
  t.equal(rows[1]?.multiple, 1.75, 'two rounds: the mean of the two');
  // Against the median floor alone the memory row would be 80 / 40 = 2x: a round of a faster VM
  // (round 2's floor of 60 µs) would no longer count against it.
});

t.test('a scenario floor with rounds prints the median parts and each row round by round', async (t) => {
  const rounds: FloorComponentsRound[] = [
    { round: 1, components: parts(30, 10, 8) },
    { round: 2, components: parts(40, 20, 8) },
  ];
  const memory = withRounds(contenderResult('tessera/memory', 'tessera', 'memory', summary(1, { serverUsPerRequest: 85 })), [
    measured(1, 80),
    measured(2, 90),
  ]);
  const floor = scenarioFloor(refresh, [memory], parts(99, 99, 99), rounds)!;
  t.equal(floor.breakdown?.signUs, 35, 'the rounds’ median, not the run’s floors');
  t.equal(floor.breakdown?.httpUs, 15);
  t.same(floor.rounds, rounds);
  t.equal(floor.rows[0]?.multiple, 1.75, '(2 + 1.5) / 2');
  t.match(
    formatFloor(floor, (id) => (id === 'tessera/memory' ? 'Tessera (memory)' : id)),
    /= \*\*50\.0\*\*.*\n- Floors measured in each round .*; each round's figure over that round's floor: Tessera \(memory\) 2\.00x old · 1\.50x old \(the row's multiple is their median\)$/s,
  );
  const runOnly = scenarioFloor(refresh, [memory], parts(30, 10, 8))!;
  t.equal(runOnly.rounds, undefined, 'without rounds: the run’s floors, as older files have it');
  t.equal(runOnly.rows[0]?.multiple, 85 / 40);
  t.notMatch(formatFloor(runOnly), /each round/);
});

t.test('minus work measured apart, rounds that spread wider than their median are not judged', async (t) => {
  const password: RequestFloor = { signatures: { ES256: 1 }, verifications: {}, store: [], excludes: 'argon2id-verify' };
  const withHash = (n: number): FloorComponentsRound => ({ round: n, components: { ...parts(30, 10, 8), hashUs: 14_000 } });
  const rounds = [withHash(1), withHash(2)];
  // 14,028 and 14,707 µs a request: 28 and 707 µs left once the hash is off (the 06:50 run's rows).
  const noisy = withRounds(contenderResult('tessera/memory', 'tessera', 'memory', summary(1)), [measured(1, 14_028), measured(2, 14_707)]);
  const [row] = floorRowsByRound(password, [noisy], rounds);
  t.equal(row?.undetermined, true);
  t.notOk(hasMultiple(row!), 'no multiple to judge');
  t.same(floorCells(row), ['–', '–', '40.0', 'n/a'], 'no new floor without a hand-off; the old one, no multiple');
  const steady = withRounds(contenderResult('tessera/memory', 'tessera', 'memory', summary(1)), [measured(1, 14_060), measured(2, 14_080)]);
  const [judged] = floorRowsByRound(password, [steady], rounds);
  t.equal(judged?.undetermined, undefined);
  t.ok(hasMultiple(judged!));
  t.equal(judged?.multiple, 1.75, '(60 + 80) / 2 / 40');
  // Without excluded work a wide spread is the VM's, and the row is judged on its median.
  const wide = withRounds(contenderResult('tessera/memory', 'tessera', 'memory', summary(1)), [measured(1, 30), measured(2, 200)]);
  const [plain] = floorRowsByRound(
    refresh,
    [wide],
    [
      { round: 1, components: parts(30, 10, 8) },
      { round: 2, components: parts(30, 10, 8) },
    ],
  );
  t.ok(hasMultiple(plain!));
});

t.test('the cheap-hash password scenario takes off the cheap verify measured in its round', async (t) => {
  const scenario = scenarios.find((s): s is ActiveScenario => s.kind === 'active' && s.name === 'password_cheap_hash');
  const floor = scenario?.floor;
  t.equal(floor?.excludes, 'argon2id-verify-cheap');
  const password = scenarios.find((s): s is ActiveScenario => s.kind === 'active' && s.name === 'password');
  t.same({ ...floor, excludes: undefined }, { ...password?.floor, excludes: undefined }, 'the password floor otherwise');
  t.match(scenario?.plan?.request.body ?? '', /username=bench-cheap/);
  // A gateway refuses a config whose hash is below the least cost it accepts (m=8 was, at start-up).
  t.ok(isPasswordHash(cheapHashUser.passwordHash), 'a hash the config accepts');
  t.ok(await verifyPassword(cheapHashUser.password, cheapHashUser.passwordHash), 'and it verifies its password');
  const round = (n: number, cheapHashUs: number): FloorComponentsRound => ({
    round: n,
    components: { ...parts(30, 10, 8), store: [], hashUs: 14_000, cheapHashUs },
  });
  const row = withRounds(contenderResult('tessera/memory', 'tessera', 'memory', summary(1)), [measured(1, 180), measured(2, 170)]);
  const [judged] = floorRowsByRound(floor!, [row], [round(1, 100), round(2, 90)]);
  t.same(
    judged?.perRound?.map((r) => [r.figureUs, r.multiple]),
    [
      [80, 2],
      [80, 2],
    ],
    'minus each round’s own cheap verify, not the 14 ms one',
  );
  t.same(
    floorRowsByRound(floor!, [row], [{ round: 1, components: { ...parts(30, 10, 8), hashUs: 14_000 } }]),
    [],
    'no cheap verify measured: no row',
  );
});

t.test('the run’s table of floors prints the cheap verify when it was measured', async (t) => {
  const lines = formatFloorComponents({ ...parts(30, 10, 8), cheapHashUs: 280 });
  t.ok(lines.includes('argon2id verify of the cheap hash: 280.0 µs of CPU, 4 at a time (again in each round of password_cheap_hash)'));
  t.notOk(
    formatFloorComponents(parts(30, 10, 8)).some((line) => line.includes('cheap')),
    'not when it was not',
  );
});
