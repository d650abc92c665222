/**
 * The worker half of the bare bridge loop (support/bridge_cost.ts): the memory store's worker
 * client (workers/store/memory_store_client.ts) over the port it is given, sending one floor store
 * command a request, `perTurn` requests' worth in one turn of the event loop as a worker's batch
 * does, and answering the main thread when `count` commands are done.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { createBridgedStore } from '../../../workers/store/memory_store_client.js';
import type { Store } from '../../../core/store/store.js';
import type { StoreCommand } from '../../scenarios/floor.js';
import { redemptionCall, type RedemptionCall } from '../floor_records.js';

export interface BridgeLoopRequest {
  command: StoreCommand;
  /** Commands sent in one turn (the batch size). */
  perTurn: number;
  /** Index of the first command: every command finds keys of its own. */
  from: number;
  count: number;
}

const ttlMs = 600_000;
const windowMs = 900_000;
const store: Store = createBridgedStore((workerData as { port: MessagePort }).port, { timeoutMs: 30_000 });

/** A record value about `bytes` long once packed. */
function valueOf(bytes: number): { v: string } {
  return { v: 'x'.repeat(Math.max(0, bytes - 6)) };
}

interface Loop {
  prepare?: (i: number) => Promise<unknown>;
  run: (i: number) => Promise<unknown>;
}

/** The status each one-call redemption must answer on the record it finds: the request's path (floor_records.ts). */
function expectStatus(status: string, wanted: string): void {
  if (status !== wanted) throw new Error(`a one-call redemption answered ${status}, not ${wanted}: not the path the request takes`);
}

/** The calls of the one-call redemptions, made whole before they are sent (prepare), each taken once (run). */
const calls = new Map<number, RedemptionCall>();

function loopOf(command: StoreCommand): Loop {
  const family = (i: number): string => `f${i}`;
  switch (command.op) {
    case 'get': {
      if (command.bytes === 0) return { run: (i) => store.get({ kind: 'jti', id: `miss${i}` }) };
      const value = valueOf(command.bytes);
      const key = (i: number) => ({ kind: 'rt' as const, id: `r${i}`, family: family(i) });
      return { prepare: (i) => store.set(key(i), value, ttlMs), run: (i) => store.get(key(i)) };
    }
    case 'del':
      return { prepare: (i) => store.increment(`c${i}`, windowMs), run: (i) => store.resetCounter(`c${i}`) };
    case 'increment':
      return { run: (i) => store.increment(`c${i}`, windowMs, 1) };
    case 'write': {
      const value = valueOf(command.bytes);
      const key = (i: number) =>
        command.family ? { kind: 'rt' as const, id: `w${i}`, family: family(i) } : { kind: 'code' as const, id: `w${i}` };
      return { run: (i) => (command.ifAbsent ? store.putIfAbsent(key(i), value, ttlMs) : store.set(key(i), value, ttlMs)) };
    }
    case 'rotate': {
      const old = valueOf(command.oldBytes);
      const successor = valueOf(command.bytes);
      const oldKey = (i: number) => ({ kind: 'rt' as const, id: `o${i}`, family: family(i) });
      return {
        prepare: (i) => store.set(oldKey(i), old, ttlMs),
        run: (i) =>
          store.rotate(
            oldKey(i),
            { kind: 'rt', id: `n${i}`, family: family(i) },
            successor,
            ttlMs,
            command.companions.map((bytes, c) => ({
              key: { kind: 'at' as const, id: `a${i}.${c}`, family: family(i) },
              value: valueOf(bytes),
              ttlMs,
            })),
          ),
      };
    }
    case 'redeemChain':
    case 'redeemRecord': {
      const record = command.op === 'redeemChain' ? 'refreshToken' : command.record;
      const expected = record === 'pendingDeviceCode' ? 'unchecked' : 'consumed';
      return {
        prepare: (i) => {
          const call = redemptionCall(record);
          calls.set(i, call);
          return store.set(call.found.key, call.found.value, call.found.ttlMs);
        },
        run: async (i) => {
          const call = calls.get(i) as RedemptionCall;
          calls.delete(i);
          const found =
            call.kind === 'chain'
              ? await store.redeemChain(call.found.key, call.successorKey, call.companions, call.checks, call.chain)
              : await store.redeemRecord(call.found.key, call.checks, call.derived, call.companions);
          expectStatus(found.status, expected);
        },
      };
    }
  }
}

/** Runs `count` commands from `from`, `perTurn` at once. */
async function inTurns(perTurn: number, from: number, count: number, each: (i: number) => Promise<unknown>): Promise<void> {
  for (let start = from; start < from + count; start += perTurn) {
    const calls: Promise<unknown>[] = [];
    for (let i = start; i < Math.min(from + count, start + perTurn); i++) calls.push(each(i));
    await Promise.all(calls);
  }
}

parentPort?.on('message', (message: BridgeLoopRequest & { phase: 'prepare' | 'run' }) => {
  const loop = loopOf(message.command);
  const each = message.phase === 'prepare' ? loop.prepare : loop.run;
  const done = each === undefined ? Promise.resolve() : inTurns(message.perTurn, message.from, message.count, each);
  done.then(
    () => parentPort?.postMessage({ ok: true }),
    (err: unknown) => parentPort?.postMessage({ ok: false, error: err instanceof Error ? err.message : String(err) }),
  );
});
