/**
 * A row against its floor (bench/report/floors.ts) and a mix's floor (bench/scenarios/floor.ts):
 * the arithmetic, and the line and cells the table prints.
 */
import t from 'tap';
import { otherGrants } from '../report/bars.js';
import { floorBreakdown, floorCells, floorRows, formatFloor, scenarioFloor } from '../report/floors.js';
import type { FloorComponents } from '../report/results.js';
import { formatScenario } from '../report/table.js';
import { mixFloors, oncePerRequest, storeCommandName, type RequestFloor } from '../scenarios/floor.js';
import { scenarios } from '../scenarios/index.js';
import { contenderResult, summary } from './summary_fixture.js';

const get = { op: 'get', bytes: 214 } as const;
const rotate = { op: 'rotate', oldBytes: 214, bytes: 336, companions: [80] } as const;

const components: FloorComponents = {
  crypto: [
    { alg: 'ES256', jwtSignUs: 30, signUs: 25, verifyUs: 60 },
    { alg: 'RS256', jwtSignUs: 900, signUs: 890, verifyUs: 40 },
  ],
  http: { usPerRequest: 10, rps: 90_000, source: 'ceiling' },
  store: [
    { name: storeCommandName(get), command: get, commands: 10_000, inFlight: 16, clientUs: 8, redisUs: 4 },
    { name: storeCommandName(rotate), command: rotate, commands: 10_000, inFlight: 16, clientUs: 20, redisUs: 28 },
  ],
  hashUs: 15_000,
};

const contender = contenderResult;

const refresh: RequestFloor = { signatures: { ES256: 1 }, verifications: {}, store: oncePerRequest(get, rotate) };

t.test('a floor adds its signatures, verifications and the bare request; on Redis its store commands too', async (t) => {
  const b = floorBreakdown({ signatures: { ES256: 2 }, verifications: { ES256: 1 }, store: oncePerRequest(get, rotate) }, components);
  t.ok(b);
  t.equal(b!.signUs, 60, 'two full JWTs');
  t.equal(b!.verifyUs, 60);
  t.equal(b!.httpUs, 10);
  t.equal(b!.storeUs, 12 + 48, 'client + redis-server of each command');
  t.equal(b!.excludedUs, 0);
  t.same(
    b!.parts.map((p) => [p.name, p.us, p.redisOnly]),
    [
      ['ES256 JWT', 60, false],
      ['ES256 verification', 60, false],
      ['bare uWS POST', 10, false],
      ['GET 214 B', 12, true],
      [storeCommandName(rotate), 48, true],
    ],
  );
  t.equal(floorBreakdown({ signatures: { RS256: 1 }, verifications: {}, store: [] }, components)?.signUs, 900, 'per algorithm');
});

t.test('no floor without the bare request or an algorithm; no store part without its commands measured', async (t) => {
  t.equal(floorBreakdown(refresh, { ...components, http: null }), null);
  t.equal(floorBreakdown(refresh, { ...components, crypto: [] }), null);
  const memoryOnly = floorBreakdown(refresh, { ...components, store: [] });
  t.equal(memoryOnly?.storeUs, null);
  t.equal(memoryOnly?.signUs, 30, 'the rest is still there');
  const noRedisCpu = floorBreakdown(refresh, { ...components, store: components.store.map((c) => ({ ...c, redisUs: null })) });
  t.equal(noRedisCpu?.storeUs, null, 'redis-server CPU unknown (not Linux)');
});

t.test('each Tessera row is its CPU per request over its floor; on Redis both sides count redis-server', async (t) => {
  const b = floorBreakdown(refresh, components)!;
  const rows = floorRows(
    [
      contender('tessera/memory', 'tessera', 'memory', summary(5_000, { serverUsPerRequest: 120 })),
      contender('tessera/redis', 'tessera', 'redis', summary(5_000, { serverUsPerRequest: 150, storeUsPerRequest: 50 })),
      contender('baseline/redis', 'baseline', 'redis', summary(5_000, { serverUsPerRequest: 130, storeUsPerRequest: 50 })),
      contender('peer/redis', 'peer', 'redis', summary(1_000, { serverUsPerRequest: 500, storeUsPerRequest: 90 })),
      contender('tessera/failed', 'tessera', 'memory', null),
      { ...contender('tessera/memory+flood', 'tessera', 'memory', summary(4_000, { serverUsPerRequest: 400 })), background: 'flood' },
    ],
    b,
    refresh,
  );
  t.same(
    rows.map((r) => [r.contender, r.floorUs, r.figureUs, r.multiple]),
    [
      ['tessera/memory', 40, 120, 3],
      ['tessera/redis', 100, 200, 2],
      ['baseline/redis', 100, 180, 1.8],
    ],
    'no peer, no failed row, no row under a background load',
  );
});

t.test('the password floor takes Tessera minus the hash, and gives no multiple without the hash measured', async (t) => {
  const password: RequestFloor = { signatures: { ES256: 1 }, verifications: {}, store: [], excludes: 'argon2id-verify' };
  const row = contender('tessera/memory', 'tessera', 'memory', summary(100, { serverUsPerRequest: 15_080 }));
  const [measured] = floorRows([row], floorBreakdown(password, components)!, password);
  t.equal(measured?.figureUs, 80);
  t.equal(measured?.multiple, 2, '(15,080 − 15,000) / 40');
  t.same(floorRows([row], floorBreakdown(password, { ...components, hashUs: null })!, password), []);
});

t.test("a mix's floor is its parts' floors weighted by their shares", async (t) => {
  const mix = mixFloors([
    { floor: { signatures: { ES256: 1 }, verifications: {}, store: [] }, weight: 3 },
    { floor: refresh, weight: 1 },
  ]);
  t.same(mix.signatures, { ES256: 1 });
  t.same(
    mix.store.map((s) => [storeCommandName(s.command), s.count]),
    [
      ['GET 214 B', 0.25],
      [storeCommandName(rotate), 0.25],
    ],
  );
  t.equal(floorBreakdown(mix, components)?.storeUs, 15, 'a quarter of 60 µs');
  t.throws(() => mixFloors([{ floor: { ...refresh, excludes: 'argon2id-verify' }, weight: 1 }]), /cannot exclude/);
  t.throws(() => mixFloors([]), /positive total weight/);
});

t.test('the table prints each row against its floor, and the floor by part', async (t) => {
  const contenders = [
    contender('tessera/memory', 'tessera', 'memory', summary(5_000, { serverUsPerRequest: 120 })),
    contender('tessera/redis', 'tessera', 'redis', summary(5_000, { serverUsPerRequest: 150, storeUsPerRequest: 50 })),
    contender('peer', 'peer', null, summary(1_000, { serverUsPerRequest: 500 })),
  ];
  const floor = scenarioFloor(refresh, contenders, components)!;
  const text = formatScenario({ name: 'refresh_token', measures: '', contenders, ratios: [], notes: [], hasErrors: false, floor });
  t.match(text, /\| 120 \| – \| – \| – \| 40\.0 \| 3\.00x \|/, 'memory: old floor 40 µs, 3x; no hand-off measured, no new floor');
  t.match(text, /\| 150 \| 50\.0 \| – \| – \| 100 \| 2\.00x \|/, 'Redis: old floor 100 µs, 2x');
  t.match(text, /\| 500 \| – \| – \| – \| – \| – \|/, 'the peer has no multiple');
  t.match(
    formatFloor(floor),
    /^Old floor per request \(this run, µs\): ES256 JWT 30\.0 \+ bare uWS POST 10\.0 = \*\*40\.0\*\*; on Redis \+ GET 214 B 12\.0 \+ EVALSHA tesseraRotate \(214 → 336 B \+ 80 B\) 48\.0 \(ioredis \+ redis-server\) = \*\*100\*\*\n/,
  );
  t.same(floorCells(undefined), ['–', '–', '–', '–']);
  t.same(
    floorCells({ contender: 'tessera/memory', floorUs: 40, figureUs: -650, multiple: -16.25, newFloorUs: 50, newMultiple: -13 }),
    ['50.0', 'n/a', '40.0', 'n/a'],
    'nothing left once the hash is off: no multiple',
  );
  t.same(floorCells({ contender: 'tessera/memory', floorUs: 40, figureUs: 60, multiple: 1.5, newFloorUs: 50, newMultiple: 1.2 }), [
    '50.0',
    '1.20x',
    '40.0',
    '1.50x',
  ]);
  const unmeasured = scenarioFloor(refresh, contenders, null)!;
  t.same(unmeasured.rows, []);
  t.match(formatFloor(unmeasured), /not measured in this run/);
});

t.test('every request scenario of the bench declares a floor; the ceiling is one', async (t) => {
  const named = [
    'client_credentials',
    'client_credentials_rs256',
    'client_credentials_private_key_jwt',
    'client_credentials_signin_flood',
    'jwks',
    'discovery',
    ...otherGrants,
    'password',
    'password_cheap_hash',
    'mixed',
  ];
  for (const name of named) {
    const scenario = scenarios.find((s) => s.name === name);
    t.ok(scenario?.kind === 'active' && scenario.floor !== undefined, `${name} declares its floor`);
  }
  const ceiling = scenarios.find((s) => s.name === 'ceiling');
  t.ok(ceiling?.kind === 'active' && ceiling.floor === undefined, 'the ceiling has none');
});
