/**
 * The store part of the floors: the commands a request is seen to send with MONITOR
 * (bench/support/store_monitor.ts), set against its scenario's declaration, and the bare ioredis
 * loop that measures each command (bench/support/store_command_cost.ts), against a real redis-server.
 */
import { Redis } from 'ioredis';
import t from 'tap';
import { oncePerRequest, type RequestFloor, type StoreCommand } from '../scenarios/floor.js';
import { measureStoreCommand } from '../support/store_command_cost.js';
import { declaredCommandNames, formatSeenCommands, seeStoreCommands, seenCommandName } from '../support/store_monitor.js';
import { issuedAccessTokenRecord } from '../../core/records/family_revocation.js';
import { newFamilyId, newRefreshHandle } from '../../core/records/refresh_token_handle.js';
import { RedisStore, redisStoreScripts } from '../../core/store/redis_store.js';
import { startRedisServer } from '../../test/helpers/redis_server.js';

/**
 * A read and a two-step rotation: what a refresh sent before it was one call (issue 33; a refresh
 * the store cannot check, one with a `scope` parameter, still does). The one-call floors:
 * redeem_floor.test.ts.
 */
const twoStepRefreshFloor: RequestFloor = {
  signatures: { ES256: 1 },
  verifications: {},
  store: oncePerRequest({ op: 'get', bytes: 214 }, { op: 'rotate', oldBytes: 214, bytes: 214, companions: [55] }),
};

t.test("a monitored command is named as the floor names it; commands of scripts and of others' keys are not counted", async (t) => {
  t.equal(seenCommandName(['get', 'bench:x:1:jti:abc'], '127.0.0.1:5000'), 'GET');
  t.equal(seenCommandName(['GET', 'bench:x:1:jti:abc'], 'lua'), null, 'run by a script');
  t.equal(seenCommandName(['get', 'floor:1:{f1}:record'], '127.0.0.1:5000'), null, 'not a gateway key');
  t.equal(seenCommandName(['evalsha', '0000', '1', 'bench:x:1:ctr:a', '900000', '1'], '127.0.0.1:5000'), 'EVALSHA unknown script');
  // A script the server did not know yet goes as EVAL with its text, which MONITOR quotes.
  const quoted = redisStoreScripts.tesseraIncrement.replaceAll('\n', '\\n');
  t.equal(seenCommandName(['eval', quoted, '1', 'bench:x:1:ctr:a', '900000', '1'], '127.0.0.1:5000'), 'EVALSHA tesseraIncrement');
});

t.test('the line beside the table says whether the request sent what its floor declares', async (t) => {
  t.same(declaredCommandNames(twoStepRefreshFloor), ['GET', 'EVALSHA tesseraRotate']);
  t.match(
    formatSeenCommands(twoStepRefreshFloor, ['GET', 'EVALSHA tesseraRotate']),
    /: GET, EVALSHA tesseraRotate, as its floor declares$/,
  );
  t.match(
    formatSeenCommands(twoStepRefreshFloor, ['GET', 'GET', 'EVALSHA tesseraRotate']),
    /GET, GET, EVALSHA tesseraRotate; its floor declares GET, EVALSHA tesseraRotate: the floor is out of date/,
  );
  t.match(formatSeenCommands(twoStepRefreshFloor, []), /preflight: none; its floor declares/);
});

t.test("the Redis store's two-step refresh (a read, a rotation with its access token) is seen as its floor declares it", async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  const store = new RedisStore({ url: redis.url, keyPrefix: 'bench:test:' });
  t.teardown(() => store.close());
  await store.ping();
  const family = newFamilyId();
  const presented = newRefreshHandle(family);
  const successor = newRefreshHandle(family);
  await store.set(presented.key, { clientId: 'ro.client' }, 60_000);
  const companion = issuedAccessTokenRecord(family, { jti: 'j1', exp: Math.floor(Date.now() / 1000) + 60 }, Date.now());
  const seen = await seeStoreCommands(redis.url, async () => {
    await store.get(presented.key);
    const rotated = await store.rotate(presented.key, successor.key, { clientId: 'ro.client' }, 60_000, companion);
    t.equal(rotated.status, 'consumed');
  });
  t.same(seen, ['GET', 'EVALSHA tesseraRotate']);
  t.match(formatSeenCommands(twoStepRefreshFloor, seen), /as its floor declares$/);
});

t.test('each command of a floor is measured as a bare loop, and leaves nothing in the store', async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  const commands: StoreCommand[] = [
    { op: 'get', bytes: 0 },
    { op: 'get', bytes: 200 },
    { op: 'del' },
    { op: 'increment' },
    { op: 'write', family: true, ifAbsent: false, bytes: 80 },
    { op: 'write', family: false, ifAbsent: true, bytes: 5 },
    { op: 'rotate', oldBytes: 200, bytes: 300, companions: [80, 300] },
  ];
  const client = new Redis(redis.url, { db: 15 });
  t.teardown(() => client.disconnect());
  for (const command of commands) {
    const cost = await measureStoreCommand(redis.url, redis.pid, command, { seconds: 0.05 });
    t.ok(cost.commands >= 5_000 && cost.clientUs > 0, `${cost.name}: ${cost.commands} commands, ${cost.clientUs.toFixed(1)} µs in ioredis`);
    if (redis.pid !== null) t.ok(cost.redisUs !== null && cost.redisUs >= 0, `${cost.name}: redis-server CPU read`);
    t.equal(await client.dbsize(), 0, `${cost.name}: the floor's database is empty again`);
  }
});

t.test('a rotation in the loop finds a live record, as a refresh does, and consumes it', async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  const monitor = new Redis(redis.url);
  t.teardown(() => monitor.disconnect());
  const replies: string[] = [];
  // The script's own calls show what it did: a consumed record is overwritten with SETRANGE.
  const watching = await monitor.monitor();
  watching.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua') replies.push(String(args[0]).toUpperCase());
  });
  await measureStoreCommand(redis.url, redis.pid, { op: 'rotate', oldBytes: 200, bytes: 300, companions: [] }, { seconds: 0.05 });
  watching.disconnect();
  const rotations = replies.filter((c) => c === 'EXISTS').length;
  t.ok(rotations > 0, 'rotations ran');
  t.equal(replies.filter((c) => c === 'SETRANGE').length, rotations, 'each one consumed a live record');
});
