/**
 * What one Redis command of the store costs, as a bare ioredis loop against the bench's
 * redis-server: the store part of a request's floor (scenarios/floor.ts). The client is set up as
 * the Redis store sets up its own (auto-pipelining, the same Lua scripts as EVALSHA), with several
 * commands in flight on one connection, as a worker's batch of requests has them; every command
 * finds the state the request finds (a live record to read or rotate, a counter to reset; for the
 * one-call redemptions of issue 33 the record the bench seeds, which the script's field checks
 * accept or refuse as they do the request's: support/floor_records.ts). CPU per command: the bench
 * process's (ioredis) and redis-server's, read from /proc as for the runs.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { packRecordWithHeader } from '../../core/store/record_codec.js';
import { redeemChainCall, redeemRecordCall, redisKeyNames, redisStoreScripts, type ScriptCall } from '../../core/store/redis_store.js';
import type { StoreCommandCost } from '../report/results.js';
import { storeCommandName, type StoreCommand } from '../scenarios/floor.js';
import { redemptionCall } from './floor_records.js';
import { processCpuSeconds } from './proc_stats.js';

/** The floor's keys live in a database of their own, emptied afterwards; the gateways use 0. */
const floorDatabase = 15;
const ttlMs = 600_000;
/** Commands in flight on the connection: about a worker's batch of requests (docs/decisions/0001-batches-across-the-thread-boundary.md). */
const defaultInFlight = 16;
/** Commands of the first loop, which also warms up; the measured loop is sized from it to last about `seconds`. */
const calibrationCommands = 2_000;

type ScriptName = keyof typeof redisStoreScripts;
type ScriptCommands = Record<`${ScriptName}Buffer`, (numKeys: number, ...args: (string | Buffer | number)[]) => Promise<unknown>>;

/** A record's bytes as the store writes them: the live header byte, then the body. */
function recordBytes(bytes: number): Buffer {
  const value = randomBytes(Math.max(1, bytes));
  value[0] = 0;
  return value;
}

/** @internal exported for bench/test */
export interface Loop {
  /** Writes what command `i` finds (not measured). */
  prepare?: (client: Redis, i: number) => void;
  run: (client: Redis, i: number) => Promise<unknown>;
  /** What is wrong with a reply of `run`, or null: checked in the calibration loop, which is not measured. */
  check?: (reply: unknown) => string | null;
}

/** Far enough ahead that no call is late (docs/storage.md, "Late rotations"); a deadline the script reads, as the store's. */
const deadlineAheadMs = 600_000;

/** The status a script's `{status, …}` reply opens with. */
function replyStatus(reply: unknown): unknown {
  return Array.isArray(reply) ? reply[0] : reply;
}

/**
 * The loop of one command under `tag`.
 * @internal exported for bench/test
 */
export function storeCommandLoop(command: StoreCommand, tag: string): Loop {
  const record = (i: number): string => `${tag}:{f${i}}:record`;
  const script = (client: Redis, name: ScriptName, keys: string[], args: (string | Buffer | number)[]): Promise<unknown> =>
    (client as unknown as ScriptCommands)[`${name}Buffer`].call(client, keys.length, ...keys, ...args);
  switch (command.op) {
    case 'get': {
      if (command.bytes === 0) return { run: (client, i) => client.getBuffer(record(i)) };
      const value = recordBytes(command.bytes);
      return { prepare: (client, i) => void client.set(record(i), value, 'PX', ttlMs), run: (client, i) => client.getBuffer(record(i)) };
    }
    case 'del':
      return { prepare: (client, i) => void client.set(record(i), '1', 'PX', ttlMs), run: (client, i) => client.del(record(i)) };
    case 'increment':
      return { run: (client, i) => script(client, 'tesseraIncrement', [`${tag}:ctr:${i}`], [900_000, 1]) };
    case 'write': {
      const value = recordBytes(command.bytes);
      const flag = command.ifAbsent ? '1' : '0';
      return {
        run: (client, i) =>
          script(client, 'tesseraWrite', command.family ? [record(i), `${tag}:{f${i}}:members`, `${tag}:{f${i}}:revoked`] : [record(i)], [
            value,
            ttlMs,
            flag,
          ]),
      };
    }
    case 'rotate': {
      const old = recordBytes(command.oldBytes);
      const successor = recordBytes(command.bytes);
      const companions = command.companions.map(recordBytes);
      return {
        prepare: (client, i) => void client.set(record(i), old, 'PX', ttlMs),
        run: (client, i) => {
          const family = `${tag}:{f${i}}`;
          const keys = [record(i), `${family}:successor`, `${family}:members`, `${family}:revoked`];
          const args: (string | Buffer | number)[] = [successor, ttlMs];
          companions.forEach((value, c) => {
            keys.push(`${family}~c${c}:record`, `${family}~c${c}:members`);
            args.push(value, ttlMs);
          });
          return script(client, 'tesseraRotate', keys, args);
        },
      };
    }
    case 'redeemChain':
    case 'redeemRecord': {
      // Each call is made whole before the window opens (fresh ids, packed values, the filter's
      // positions): the window holds the commands alone, as for the others.
      // Named as a store with the prefix `${tag}:` names them.
      const keys = redisKeyNames(`${tag}:`);
      const calls = new Map<number, ScriptCall>();
      const record = command.op === 'redeemChain' ? 'refreshToken' : command.record;
      const name = command.op === 'redeemChain' ? 'tesseraRedeemChain' : 'tesseraRedeemRecord';
      // The state the request finds: its record consumed and rotated (1), or handed back unchecked (6).
      const expected = record === 'pendingDeviceCode' ? 6 : 1;
      return {
        prepare: (client, i) => {
          const call = redemptionCall(record);
          const { found } = call;
          const family = found.key.family as string;
          // Written as the store's `set` writes a family record (the bench seeds them so).
          void script(
            client,
            'tesseraWrite',
            [keys.record(found.key), keys.members(family), keys.revoked(family)],
            [packRecordWithHeader(found.value, 1), found.ttlMs, '0'],
          );
          calls.set(
            i,
            call.kind === 'chain'
              ? redeemChainCall(keys, found.key, call.successorKey, call.companions, call.checks, call.chain, Date.now() + deadlineAheadMs)
              : redeemRecordCall(keys, found.key, call.checks, call.derived, call.companions),
          );
        },
        run: (client, i) => {
          const { keys: names, args } = calls.get(i) as ScriptCall;
          calls.delete(i);
          return script(client, name, names, args);
        },
        check: (reply) =>
          replyStatus(reply) === expected
            ? null
            : `${name} answered ${JSON.stringify(replyStatus(reply))}, not ${expected}: not the path the request takes`,
      };
    }
  }
}

/** Runs `count` commands from `from`, `inFlight` at a time; resolves the wall seconds it took. */
async function runLoop(client: Redis, loop: Loop, from: number, count: number, inFlight: number): Promise<number> {
  if (loop.prepare !== undefined) {
    for (let i = from; i < from + count; i++) loop.prepare(client, i);
    // Auto-pipelined writes: a PING after them answers once they are all done.
    await client.ping();
  }
  let next = from;
  const end = from + count;
  const started = performance.now();
  const check = loop.check;
  const worker = async (): Promise<void> => {
    if (check === undefined) {
      while (next < end) await loop.run(client, next++);
      return;
    }
    while (next < end) {
      const problem = check(await loop.run(client, next++));
      if (problem !== null) throw new Error(`the floor's loop: ${problem}`);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return (performance.now() - started) / 1000;
}

/**
 * Measures one command for about `seconds`. `redisPid` is the bench's redis-server (its CPU is
 * read from /proc; null elsewhere). Leaves nothing behind: the floor's database is emptied.
 */
export async function measureStoreCommand(
  redisUrl: string,
  redisPid: number | null,
  command: StoreCommand,
  options: { seconds?: number; inFlight?: number } = {},
): Promise<StoreCommandCost> {
  const inFlight = options.inFlight ?? defaultInFlight;
  const client = new Redis(redisUrl, {
    db: floorDatabase,
    enableAutoPipelining: true,
    connectionName: 'tessera-bench-floor',
    scripts: Object.fromEntries(Object.entries(redisStoreScripts).map(([name, lua]) => [name, { lua }])),
  });
  try {
    const loop = storeCommandLoop(command, `floor:${randomBytes(4).toString('hex')}`);
    const calibration = await runLoop(client, loop, 0, calibrationCommands, inFlight);
    const commands = Math.min(200_000, Math.max(5_000, Math.round(((options.seconds ?? 1) * calibrationCommands) / calibration)));
    // Prepared before the window opens: the window holds the commands alone.
    if (loop.prepare !== undefined) {
      for (let i = calibrationCommands; i < calibrationCommands + commands; i++) loop.prepare(client, i);
      await client.ping();
    }
    // Without its check: the calibration loop made sure the replies are the request's.
    const measured: Loop = { run: loop.run };
    const clientAt = process.cpuUsage();
    const redisAt = redisPid === null ? null : processCpuSeconds(redisPid);
    await runLoop(client, measured, calibrationCommands, commands, inFlight);
    const clientCpu = process.cpuUsage(clientAt);
    const redisAfter = redisPid === null ? null : processCpuSeconds(redisPid);
    return {
      name: storeCommandName(command),
      command,
      commands,
      inFlight,
      clientUs: (clientCpu.user + clientCpu.system) / commands,
      redisUs: redisAt === null || redisAfter === null ? null : ((redisAfter - redisAt) * 1e6) / commands,
    };
  } finally {
    await client.flushdb().catch(() => {});
    client.disconnect();
  }
}
