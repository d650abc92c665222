/**
 * The wire of the memory store's thread bridge: how a Piscina worker calls the one `MemoryStore`
 * on the main thread (one copy of the state is what makes consume-once hold across threads).
 *
 * - Each worker opens a `MessageChannel` when it starts, keeps one end and posts the other to the
 *   main thread on its `parentPort` as a {@link StorePortOffer}; Piscina hands that message to
 *   the pool's `'message'` listeners. A worker that Piscina starts to replace a crashed one
 *   offers its own port the same way. So every worker has a port of its own: no broadcast.
 * - On that port the worker sends {@link BridgeRequest}s (`id`, a {@link Store} method name, its
 *   arguments) and the main thread answers each with one {@link BridgeResponse} carrying the same
 *   `id`: the method's result, or a {@link BridgeError}.
 * - A message is an array: the calls a worker makes in one turn of its event loop travel as one
 *   message, and their answers come back as one. A worker runs a batch of requests at once, so
 *   their store calls come together; each message costs a wake-up of the other thread, which is
 *   what the per-call broadcast this replaced spent most of its time on.
 *
 * Messages cross by structured clone: measured, packing them with msgpackr first was no faster,
 * and the store packs records with msgpackr on arrival anyway, so a record comes back exactly
 * as it would from Redis. Errors cross as plain objects with a `code`, since class identity does not
 * survive structured clone; the worker re-creates the store's error classes from it.
 */
import type { MessagePort } from 'node:worker_threads';
import type { Store } from '../core/store/store.js';

/**
 * The {@link Store} methods a worker calls across the bridge: every method but `close`, which
 * stays local to each side (a worker closing its end must not close the shared store).
 */
export type StoreMethod = Exclude<keyof Store, 'close'>;

// Written once, as a record so that the compiler checks it both ways: a Store method missing
// here or a name that is not one fails to build.
const bridged: { readonly [M in StoreMethod]: true } = {
  set: true,
  get: true,
  delete: true,
  consume: true,
  rotate: true,
  rotateChain: true,
  chainLookup: true,
  redeemChain: true,
  redeemRecord: true,
  writeWhileLive: true,
  revokeFamily: true,
  isFamilyRevoked: true,
  familyRecords: true,
  listFamily: true,
  scanFamily: true,
  listRecords: true,
  putIfAbsent: true,
  replaceIfUnchanged: true,
  increment: true,
  resetCounter: true,
  ping: true,
  checkReady: true,
};

export const storeMethods = Object.freeze(Object.keys(bridged)) as readonly StoreMethod[];

export function isStoreMethod(name: unknown): name is StoreMethod {
  return typeof name === 'string' && Object.hasOwn(bridged, name);
}

/** Worker → main thread: call `method` with `args`; `id` is unique among the port's pending calls. */
export interface BridgeRequest {
  readonly id: number;
  readonly method: StoreMethod;
  readonly args: unknown[];
}

/** Main thread → worker: the answer to the request with the same `id`. */
export type BridgeResponse =
  | { readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly id: number; readonly ok: false; readonly error: BridgeError };

export interface BridgeError {
  /** The store error's own `code`; `error` for anything else (a misuse, a bug). */
  readonly code: 'store_unavailable' | 'family_revoked' | 'error';
  /** `Error`, `RangeError` or `TypeError`, so a misuse reads the same on both sides. */
  readonly name: 'Error' | 'RangeError' | 'TypeError';
  /** For `store_unavailable` the detail only, without the error's fixed prefix. */
  readonly message: string;
  /** For `family_revoked`: the revoked family. */
  readonly family?: string;
}

/** Worker → main thread on `parentPort`, once per worker: the port its store calls arrive on. */
export interface StorePortOffer {
  readonly kind: 'tessera.store-port';
  readonly port: MessagePort;
}

export function isStorePortOffer(message: unknown): message is StorePortOffer {
  return typeof message === 'object' && message !== null && (message as Partial<StorePortOffer>).kind === 'tessera.store-port';
}

const unavailablePrefix = 'store unavailable: ';

/**
 * What a failed store call sends back. Reads the store errors' `code` (not their class), so that
 * this contract needs nothing from the store's implementation.
 */
export function toBridgeError(err: unknown): BridgeError {
  const name = err instanceof RangeError ? 'RangeError' : err instanceof TypeError ? 'TypeError' : 'Error';
  const message = err instanceof Error ? err.message : String(err);
  const fields = typeof err === 'object' && err !== null ? (err as { code?: unknown; family?: unknown }) : {};
  if (fields.code === 'family_revoked' && typeof fields.family === 'string') {
    return { code: 'family_revoked', name, message, family: fields.family };
  }
  if (fields.code === 'store_unavailable') {
    return {
      code: 'store_unavailable',
      name,
      message: message.startsWith(unavailablePrefix) ? message.slice(unavailablePrefix.length) : message,
    };
  }
  return { code: 'error', name, message };
}
