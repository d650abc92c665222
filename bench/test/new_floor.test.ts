/**
 * Issue 33's new floor (bench/report/floors.ts): the old floor + one bare batch hand-off per
 * request at the row's batch size + on the memory store its store commands through the bridge,
 * judged round by round; the old floor printed beside it in the table, the lines below it and the
 * results file. And the parts themselves, measured for real: a bare hand-off through a pool like
 * the gateway's (bench/support/handoff_cost.ts) and store commands through the memory store's
 * bridge (bench/support/bridge_cost.ts).
 */
import t from 'tap';
import { bridgeFloorUs, floorBreakdown, floorCells, formatFloor, medianComponents, scenarioFloor } from '../report/floors.js';
import type { ContenderResult, FloorComponents, FloorComponentsRound, RoundResult } from '../report/results.js';
import { formatScenario } from '../report/table.js';
import { oncePerRequest, storeCommandName, type RequestFloor } from '../scenarios/floor.js';
import { measureBridgeCommands } from '../support/bridge_cost.js';
import { closeHandoffPools, measureHandoff } from '../support/handoff_cost.js';
import { contenderResult, roundResult, summary } from './summary_fixture.js';

const get = { op: 'get', bytes: 214 } as const;
const rotate = { op: 'rotate', oldBytes: 214, bytes: 336, companions: [80] } as const;
const refresh: RequestFloor = { signatures: { ES256: 1 }, verifications: {}, store: oncePerRequest(get, rotate) };
const noStore: RequestFloor = { signatures: { ES256: 1 }, verifications: {}, store: [] };

/** One round's parts: a 30 µs JWT, a 10 µs bare request, GET 12 µs and rotate 48 µs on Redis; hand-offs and bridges as given. */
function parts(handoff: Record<string, number>, bridge: Record<string, { get: number; rotate: number }> = {}): FloorComponents {
  return {
    crypto: [{ alg: 'ES256', jwtSignUs: 30, signUs: 25, verifyUs: 60 }],
    http: { usPerRequest: 10, rps: 90_000, source: 'round' },
    store: [
      { name: storeCommandName(get), command: get, commands: 1_000, inFlight: 16, clientUs: 8, redisUs: 4 },
      { name: storeCommandName(rotate), command: rotate, commands: 1_000, inFlight: 16, clientUs: 20, redisUs: 28 },
    ],
    hashUs: null,
    handoff: Object.entries(handoff).map(([contender, usPerRequest]) => ({
      contender,
      batch: 10,
      size: 10,
      tasks: 1_000,
      usPerTask: usPerRequest * 10,
      usPerRequest,
    })),
    bridge: Object.entries(bridge).map(([contender, us]) => ({
      contender,
      commands: [
        { name: storeCommandName(get), command: get, commands: 1_000, perTurn: 10, us: us.get },
        { name: storeCommandName(rotate), command: rotate, commands: 1_000, perTurn: 10, us: us.rotate },
      ],
    })),
  };
}

function measured(n: number, serverUs: number, redisUs: number | null = null): RoundResult {
  const round = roundResult({ n });
  return { ...round, cpu: { ...round.cpu, serverUsPerRequest: serverUs, storeUsPerRequest: redisUs } };
}

function row(id: string, store: ContenderResult['store'], rounds: RoundResult[]): ContenderResult {
  return {
    ...contenderResult(id, 'tessera', store, summary(5_000, { serverUsPerRequest: rounds[0]?.cpu.serverUsPerRequest ?? null })),
    rounds,
  };
}

t.test('the new floor adds one hand-off per request, and on memory the bridge round trips of its store commands', async (t) => {
  const rounds: FloorComponentsRound[] = [
    { round: 1, components: parts({ 'tessera/memory': 8, 'tessera/redis': 5 }, { 'tessera/memory': { get: 6, rotate: 16 } }) },
  ];
  const contenders = [row('tessera/memory', 'memory', [measured(1, 124)]), row('tessera/redis', 'redis', [measured(1, 150, 50)])];
  const floor = scenarioFloor(refresh, contenders, null, rounds)!;
  const memory = floor.rows.find((r) => r.contender === 'tessera/memory')!;
  // Old: 30 + 10 = 40. New: 40 + 8 (hand-off) + 6 + 16 (GET and rotate through the bridge) = 70.
  t.same([memory.floorUs, memory.multiple, memory.newFloorUs, memory.handoffUs, memory.bridgeUs], [40, 3.1, 70, 8, 22]);
  t.equal(memory.newMultiple, 124 / 70);
  const redis = floor.rows.find((r) => r.contender === 'tessera/redis')!;
  // Old: 40 + 12 + 48 = 100 (ioredis + redis-server). New: + 5 of hand-off, no bridge on Redis.
  t.same([redis.floorUs, redis.multiple, redis.newFloorUs, redis.newMultiple, redis.bridgeUs], [100, 2, 105, 200 / 105, null]);
  t.same(
    floor.rows[0]?.perRound?.map((r) => [r.round, r.multiple, r.newFloorUs]),
    [[1, 3.1, 70]],
    'each round carries both floors',
  );
});

t.test('the hand-off is per row and per round: each row against its own, the multiple the median of its rounds', async (t) => {
  const rounds: FloorComponentsRound[] = [
    { round: 1, components: parts({ tessera: 10 }) },
    { round: 2, components: parts({ tessera: 20 }) },
    { round: 3, components: parts({ tessera: 5 }) },
  ];
  const contenders = [row('tessera', null, [measured(1, 100), measured(2, 120), measured(3, 90)])];
  const [only] = scenarioFloor(noStore, contenders, null, rounds)!.rows;
  t.same(
    only?.perRound?.map((r) => r.newFloorUs),
    [50, 60, 45],
  );
  t.equal(only?.newMultiple, 2, 'median of 100/50, 120/60, 90/45');
  t.equal(only?.newFloorUs, 50);
  t.equal(only?.handoffUs, 10);
  t.same(
    medianComponents(rounds.map((r) => r.components)).handoff?.map((h) => [h.contender, h.usPerRequest, h.tasks]),
    [['tessera', 10, 3_000]],
  );
});

t.test('no new floor without the row’s hand-off, or on memory without its bridge; the old one stays', async (t) => {
  const contenders = [row('tessera/memory', 'memory', [measured(1, 80)]), row('tessera/redis', 'redis', [measured(1, 150, 50)])];
  const noHandoff = scenarioFloor(refresh, contenders, null, [{ round: 1, components: parts({}) }])!;
  t.same(
    noHandoff.rows.map((r) => [r.contender, r.floorUs, r.newFloorUs, r.newMultiple]),
    [
      ['tessera/memory', 40, null, null],
      ['tessera/redis', 100, null, null],
    ],
  );
  const noBridge = scenarioFloor(refresh, contenders, null, [
    { round: 1, components: parts({ 'tessera/memory': 8, 'tessera/redis': 5 }) },
  ])!;
  t.equal(noBridge.rows[0]?.newFloorUs, null, 'memory: its store commands through the bridge are part of it');
  t.equal(noBridge.rows[1]?.newFloorUs, 105, 'Redis needs no bridge');
  t.equal(
    bridgeFloorUs(refresh, [{ name: storeCommandName(get), command: get, commands: 1, perTurn: 1, us: 3 }]),
    null,
    'a command missing',
  );
  const memoryNoStore = scenarioFloor(noStore, [row('tessera/memory', 'memory', [measured(1, 80)])], null, [
    { round: 1, components: parts({ 'tessera/memory': 8 }) },
  ])!;
  t.equal(memoryNoStore.rows[0]?.newFloorUs, 48, 'a request without store commands needs no bridge on memory either');
  t.same(floorCells(noHandoff.rows[0]), ['–', '–', '40.0', '2.00x'], 'the old floor printed alone');
});

t.test('the table prints the new floor and its multiple, then the old ones; the lines below say what each is made of', async (t) => {
  const rounds: FloorComponentsRound[] = [
    { round: 1, components: parts({ 'tessera/memory': 8, 'tessera/redis': 5 }, { 'tessera/memory': { get: 6, rotate: 16 } }) },
  ];
  const contenders = [row('tessera/memory', 'memory', [measured(1, 140)]), row('tessera/redis', 'redis', [measured(1, 160, 50)])];
  const floor = scenarioFloor(refresh, contenders, null, rounds)!;
  t.same(floorBreakdown(refresh, rounds[0]!.components)?.handoffUs, { 'tessera/memory': 8, 'tessera/redis': 5 });
  const text = formatScenario({ name: 'refresh_token', measures: '', contenders, ratios: [], notes: [], hasErrors: false, floor });
  t.match(text, /\| server µs\/req \| Redis µs\/req \| floor µs \| × floor \| old floor µs \| × old floor \|/);
  t.match(text, /\| 140 \| – \| 70\.0 \| 2\.00x \| 40\.0 \| 3\.50x \|/, 'memory: 140 over 70, and over the old 40');
  t.match(text, /\| 105 \| 2\.00x \| 100 \| 2\.10x \|/, 'Redis: 210 over 105, and over the old 100');
  const header = text.split('\n').find((l) => l.startsWith('| contender'))!;
  const rule = text.split('\n').find((l) => l.startsWith('|---'))!;
  t.equal(header.split('|').length, rule.split('|').length, 'the rule has a cell per column');
  const lines = formatFloor(floor);
  t.match(lines, /^Old floor per request \(this run, µs\): ES256 JWT 30\.0 \+ bare uWS POST 10\.0 = \*\*40\.0\*\*/);
  t.match(
    lines,
    /New floor per request .*: tessera\/memory: old 40\.0 \+ hand-off 8\.0 \+ bridge 22\.0 = \*\*70\.0\*\*; tessera\/redis: old 100 \+ hand-off 5\.0 = \*\*105\*\*/,
  );
  t.match(lines, /tessera\/memory 2\.00x \(old 3\.50x\)/);
});

t.test('the parts measured for real: a bare hand-off through a pool like the gateway’s, and commands through the bridge', async (t) => {
  t.teardown(closeHandoffPools);
  const one = await measureHandoff(2, 1, { seconds: 0.3 });
  const sixteen = await measureHandoff(2, 16, { seconds: 0.3 });
  t.ok(one.tasks > 0 && sixteen.tasks > 0, 'tasks ran');
  t.equal(sixteen.size, 16);
  t.equal(sixteen.usPerRequest, sixteen.usPerTask / 16);
  t.ok(sixteen.usPerRequest < one.usPerRequest, 'a batch shares one crossing among its requests');
  const costs = await measureBridgeCommands([get, rotate, { op: 'get', bytes: 0 }, { op: 'increment' }, { op: 'del' }], 8, {
    seconds: 0.1,
  });
  t.same(
    costs.map((c) => [c.name, c.perTurn]),
    [
      [storeCommandName(get), 8],
      [storeCommandName(rotate), 8],
      ['GET (absent)', 8],
      ['EVALSHA tesseraIncrement', 8],
      ['DEL', 8],
    ],
  );
  t.ok(
    costs.every((c) => c.us > 0 && c.commands >= 2_000),
    'every command measured',
  );
});
