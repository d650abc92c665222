/**
 * The one-call redemptions in the floors (issue 33): refresh_token's `EVALSHA tesseraRedeemChain`,
 * authorization_code's and device_code's `EVALSHA tesseraRedeemRecord`. Their names and the
 * MONITOR names they are checked against; the scenarios' declarations against what the Redis
 * store really sends for those calls; and the bare loops (ioredis on a real redis-server, the
 * memory store's bridge), each call taking the path the request takes: the record the bench
 * seeds passes the store's field checks, or for a device code not approved yet fails them.
 */
import { Redis } from 'ioredis';
import t from 'tap';
import { RedisStore } from '../../core/store/redis_store.js';
import { startRedisServer } from '../../test/helpers/redis_server.js';
import { authorizationCodeFloor } from '../scenarios/authorization_code.js';
import { deviceCode } from '../scenarios/device_code.js';
import { storeCommandName, type StoreCommand } from '../scenarios/floor.js';
import { mixed } from '../scenarios/mixed.js';
import { refreshTokenFloor } from '../scenarios/refresh_token.js';
import { measureBridgeCommands } from '../support/bridge_cost.js';
import { redemptionCall, storedBytes } from '../support/floor_records.js';
import { measureStoreCommand, storeCommandLoop } from '../support/store_command_cost.js';
import { declaredCommandNames, formatSeenCommands, seeStoreCommands } from '../support/store_monitor.js';

const redeemChain: StoreCommand = { op: 'redeemChain', bytes: 214, companions: [55] };
const redeemCode: StoreCommand = { op: 'redeemRecord', record: 'code', bytes: 321, derivedBytes: 248, companions: [55] };
const pendingDevice: StoreCommand = { op: 'redeemRecord', record: 'pendingDeviceCode', bytes: 103 };
const deviceFloor = deviceCode.floor;

t.test('the one-call redemptions are named apart, and as MONITOR names them', async (t) => {
  t.equal(storeCommandName(redeemChain), 'EVALSHA tesseraRedeemChain (214 → 214 B + 55 B)');
  t.equal(storeCommandName(redeemCode), 'EVALSHA tesseraRedeemRecord (code 321 → 248 B + 55 B)');
  t.equal(storeCommandName(pendingDevice), 'EVALSHA tesseraRedeemRecord (pending device code 103 B, unchecked)');
  t.same(declaredCommandNames(refreshTokenFloor), ['EVALSHA tesseraRedeemChain']);
  t.same(declaredCommandNames(authorizationCodeFloor), ['EVALSHA tesseraRedeemRecord']);
  t.ok(deviceFloor !== undefined);
  t.same(declaredCommandNames(deviceFloor!), ['EVALSHA tesseraRedeemRecord', 'GET', 'EVALSHA tesseraWrite']);
  t.match(formatSeenCommands(refreshTokenFloor, ['EVALSHA tesseraRedeemChain']), /as its floor declares$/);
  t.match(
    formatSeenCommands(refreshTokenFloor, ['GET', 'EVALSHA tesseraRotate']),
    /the floor is out of date/,
    'the two-step refresh is not',
  );
  // The mix takes its parts' declarations: a quarter of its requests are refreshes, a tenth codes.
  const shares = new Map(mixed.floor?.store.map(({ command, count }) => [storeCommandName(command), count]));
  t.equal(shares.get(storeCommandName(redeemChain)), 0.25);
  t.equal(shares.get(storeCommandName(redeemCode)), 0.1);
  t.notOk(
    [...shares.keys()].some((name) => name.includes('tesseraRotate')),
    'no two-step rotation left in the mix',
  );
});

t.test('the declared sizes are those of the records the bench seeds', async (t) => {
  t.equal(storedBytes('refreshToken'), 214);
  t.equal(storedBytes('code'), 321);
  t.equal(storedBytes('pendingDeviceCode'), 103);
});

t.test("the Redis store's one-call redemptions of the floor's calls are seen as the scenarios declare them", async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  const store = new RedisStore({ url: redis.url, keyPrefix: 'bench:test:' });
  t.teardown(() => store.close());
  await store.ping();
  const refresh = redemptionCall('refreshToken');
  const code = redemptionCall('code');
  const device = redemptionCall('pendingDeviceCode');
  for (const call of [refresh, code, device]) await store.set(call.found.key, call.found.value, call.found.ttlMs);
  const client = new Redis(redis.url);
  t.teardown(() => client.disconnect());
  const seen = async (during: () => Promise<void>): Promise<string[]> => seeStoreCommands(redis.url, during);

  const refreshSeen = await seen(async () => {
    if (refresh.kind !== 'chain') throw new Error('a chain call');
    const found = await store.redeemChain(refresh.found.key, refresh.successorKey, refresh.companions, refresh.checks, refresh.chain);
    t.equal(found.status, 'consumed', "the seeded refresh token passes the store's checks");
  });
  t.match(formatSeenCommands(refreshTokenFloor, refreshSeen), /as its floor declares$/);

  const codeSeen = await seen(async () => {
    if (code.kind !== 'record') throw new Error('a record call');
    const found = await store.redeemRecord(code.found.key, code.checks, code.derived, code.companions);
    t.ok(found.status === 'consumed' && found.derived, 'the seeded code passes, and its refresh token is derived');
  });
  t.match(formatSeenCommands(authorizationCodeFloor, codeSeen), /as its floor declares$/);
  const derivedKey = code.kind === 'record' ? code.derived?.key : undefined;
  const derived = await client.getBuffer(`bench:test:{${derivedKey?.family}}:rt:${derivedKey?.id}`);
  // 248 B: the script writes small maps with fixmap headers where msgpackr writes map16 (252 B).
  t.equal(derived?.length, 248, 'the derived refresh token is as large as declared');

  const deviceSeen = await seen(async () => {
    if (device.kind !== 'record') throw new Error('a record call');
    const found = await store.redeemRecord(device.found.key, device.checks, device.derived, device.companions);
    t.equal(found.status, 'unchecked', 'a pending device code is handed back, as the poll finds it');
  });
  t.same(deviceSeen, ['EVALSHA tesseraRedeemRecord'], 'the redemption part of the poll (its poll state follows)');
});

t.test('each one-call redemption in the bare ioredis loop takes the request’s path, and leaves nothing behind', async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  const client = new Redis(redis.url, { db: 15 });
  t.teardown(() => client.disconnect());
  for (const command of [redeemChain, redeemCode, pendingDevice]) {
    const cost = await measureStoreCommand(redis.url, redis.pid, command, { seconds: 0.05 });
    t.ok(cost.commands >= 5_000 && cost.clientUs > 0, `${cost.name}: ${cost.commands} commands, ${cost.clientUs.toFixed(1)} µs in ioredis`);
    if (redis.pid !== null) t.ok(cost.redisUs !== null && cost.redisUs > 0, `${cost.name}: redis-server CPU read`);
    t.equal(await client.dbsize(), 0, `${cost.name}: the floor's database is empty again`);
  }
});

t.test('the loop’s calls are answered as the request’s: rotated, consumed with a derived token, or handed back', async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  const { redisStoreScripts } = await import('../../core/store/redis_store.js');
  const client = new Redis(redis.url, {
    db: 15,
    scripts: Object.fromEntries(Object.entries(redisStoreScripts).map(([name, lua]) => [name, { lua }])),
  });
  t.teardown(() => client.disconnect());
  const replies = async (command: StoreCommand): Promise<unknown[][]> => {
    const loop = storeCommandLoop(command, 'floor:test');
    for (let i = 0; i < 3; i++) loop.prepare?.(client, i);
    await client.ping();
    const answers: unknown[][] = [];
    for (let i = 0; i < 3; i++) {
      const reply = (await loop.run(client, i)) as unknown[];
      t.equal(loop.check?.(reply), null, `${storeCommandName(command)}: the check passes`);
      answers.push(reply);
    }
    return answers;
  };
  t.same(
    (await replies(redeemChain)).map((r) => r[0]),
    [1, 1, 1],
    'each refresh token is checked and rotated',
  );
  t.same(
    (await replies(redeemCode)).map((r) => [r[0], r[2]]),
    [
      [1, 1],
      [1, 1],
      [1, 1],
    ],
    'each code is consumed and its refresh token derived',
  );
  t.same(
    (await replies(pendingDevice)).map((r) => r[0]),
    [6, 6, 6],
    'each pending device code is handed back unchecked',
  );
  // The check stops a loop whose calls miss the request's path (here: the record is gone).
  const loop = storeCommandLoop(redeemCode, 'floor:test2');
  loop.prepare?.(client, 0);
  await client.flushdb();
  t.match(loop.check?.(await loop.run(client, 0)), /answered 0, not 1/);
});

t.test('through the memory store’s bridge, each one-call redemption is one call on the request’s path', async (t) => {
  const costs = await measureBridgeCommands([redeemChain, redeemCode, pendingDevice], 8, { seconds: 0.1 });
  t.same(
    costs.map((c) => c.name),
    [redeemChain, redeemCode, pendingDevice].map(storeCommandName),
  );
  t.ok(
    costs.every((c) => c.us > 0 && c.commands >= 2_000),
    'every call measured (a call off the request’s path fails the loop)',
  );
});
