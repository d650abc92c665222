/**
 * The in-memory store seen from Piscina worker threads.
 *
 * A {@link MemoryStore} lives on the main thread only: one copy of the state is what makes
 * consume-once hold across threads (SPEC §4 "Single use"). Workers reach it through a
 * `BroadcastChannel` of `node:worker_threads`:
 *
 * - request (worker → main): `{ t, s, op, args }`: `t` the sender's `threadId`, `s` a sequence
 *   number unique within that thread, `op` a {@link Store} method name, `args` its arguments;
 * - reply (main → every listener, since a BroadcastChannel broadcasts): `{ t, s, ok: true, v }` or
 *   `{ t, s, ok: false, e: { code, message, family? } }`. A {@link ChannelStore} keeps only the
 *   replies carrying its own `t` and a pending `s`.
 *
 * Values, keys and results cross by structured clone; the MemoryStore packs them with msgpackr
 * on arrival, so a record comes back exactly as it would from Redis. Errors cross as plain
 * objects with a `code` (class identity does not survive structured clone) and are re-created as
 * {@link StoreUnavailableError} / {@link FamilyRevokedError} on the worker side.
 *
 * Both ends `unref()` the channel: it never keeps a thread alive by itself. A pending request
 * does, until its reply or its timeout.
 */
import { BroadcastChannel, threadId } from 'node:worker_threads';
import { FamilyRevokedError, StoreUnavailableError, isStoreUnavailable } from './store.js';
import type { CompanionRecord, ConsumeResult, CounterResult, RecordKind, Store, StoreKey } from './store.js';
// For the TSDoc links only.
import type { MemoryStore } from './memory_store.js';

/** The {@link Store} methods a worker may call; `close` stays local to each side. */
type StoreOp =
  | 'set'
  | 'get'
  | 'delete'
  | 'consume'
  | 'rotate'
  | 'revokeFamily'
  | 'isFamilyRevoked'
  | 'familyRecords'
  | 'putIfAbsent'
  | 'increment'
  | 'resetCounter'
  | 'ping';

const storeOps: ReadonlySet<string> = new Set<StoreOp>([
  'set',
  'get',
  'delete',
  'consume',
  'rotate',
  'revokeFamily',
  'isFamilyRevoked',
  'familyRecords',
  'putIfAbsent',
  'increment',
  'resetCounter',
  'ping',
]);

interface ChannelRequest {
  t: number;
  s: number;
  op: StoreOp;
  args: unknown[];
}

interface ChannelError {
  code: 'store_unavailable' | 'family_revoked' | 'error';
  /** `Error`, `RangeError` or `TypeError`, so a misuse reads the same on both sides. */
  name: string;
  message: string;
  family?: string;
}

type ChannelReply = { t: number; s: number; ok: true; v: unknown } | { t: number; s: number; ok: false; e: ChannelError };

/** Replies time out after this long unless the ChannelStore is told otherwise. */
export const defaultChannelTimeoutMs = 2000;

const unavailablePrefix = 'store unavailable: ';

function isRequest(message: unknown): message is ChannelRequest {
  if (typeof message !== 'object' || message === null) return false;
  const m = message as Partial<ChannelRequest>;
  return (
    typeof m.t === 'number' &&
    typeof m.s === 'number' &&
    typeof m.op === 'string' &&
    storeOps.has(m.op) &&
    Array.isArray(m.args)
  );
}

function isReply(message: unknown): message is ChannelReply {
  if (typeof message !== 'object' || message === null) return false;
  const m = message as Partial<ChannelReply>;
  return typeof m.t === 'number' && typeof m.s === 'number' && typeof m.ok === 'boolean';
}

function toChannelError(err: unknown): ChannelError {
  const name = err instanceof RangeError ? 'RangeError' : err instanceof TypeError ? 'TypeError' : 'Error';
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof FamilyRevokedError) {
    // The family name is only in the message; recover it from the key the caller sent instead.
    return { code: 'family_revoked', name, message };
  }
  if (isStoreUnavailable(err)) {
    const detail = message.startsWith(unavailablePrefix) ? message.slice(unavailablePrefix.length) : message;
    return { code: 'store_unavailable', name, message: detail };
  }
  return { code: 'error', name, message };
}

function fromChannelError(e: ChannelError): Error {
  switch (e.code) {
    case 'family_revoked':
      return new FamilyRevokedError(e.family ?? '');
    case 'store_unavailable':
      return new StoreUnavailableError(e.message);
    default:
      return e.name === 'RangeError' ? new RangeError(e.message) : e.name === 'TypeError' ? new TypeError(e.message) : new Error(e.message);
  }
}

/** The family a failed `set`/`putIfAbsent` wrote into, so FamilyRevokedError names it. */
function familyOf(request: ChannelRequest): string | undefined {
  const key = request.args[0] as Partial<StoreKey> | undefined;
  return typeof key?.family === 'string' ? key.family : undefined;
}

function dispatch(store: Store, op: StoreOp, args: unknown[]): Promise<unknown> {
  // Arguments come from our own ChannelStore in the same process; the store validates values.
  const a = args as [never, never, never, never, never];
  switch (op) {
    case 'set':
      return store.set(a[0] as StoreKey, a[1], a[2] as number);
    case 'get':
      return store.get(a[0] as StoreKey);
    case 'delete':
      return store.delete(a[0] as StoreKey);
    case 'consume':
      return store.consume(a[0] as StoreKey);
    case 'rotate':
      return store.rotate(a[0] as StoreKey, a[1] as StoreKey, a[2], a[3] as number, a[4] as CompanionRecord<unknown> | undefined);
    case 'revokeFamily':
      return store.revokeFamily(a[0] as string, a[1] as number);
    case 'isFamilyRevoked':
      return store.isFamilyRevoked(a[0] as string);
    case 'familyRecords':
      return store.familyRecords(a[0] as string, a[1] as RecordKind);
    case 'putIfAbsent':
      return store.putIfAbsent(a[0] as StoreKey, a[1], a[2] as number);
    case 'increment':
      return store.increment(a[0] as string, a[1] as number);
    case 'resetCounter':
      return store.resetCounter(a[0] as string);
    case 'ping':
      return store.ping();
  }
}

/**
 * Serves `store` (a {@link MemoryStore} on the main thread) to the {@link ChannelStore}s of the
 * worker threads listening on `channelName`. Returns the function that stops serving; it does
 * not close the store.
 *
 * @example
 * ```ts
 * const store = new MemoryStore();
 * const stopServing = serveMemoryStore(store, channelName);
 * // workers: const store = new ChannelStore(channelName);
 * ```
 */
export function serveMemoryStore(store: Store, channelName: string): () => void {
  const channel = new BroadcastChannel(channelName);
  channel.unref();
  let serving = true;

  const answer = async (request: ChannelRequest): Promise<void> => {
    let reply: ChannelReply;
    try {
      reply = { t: request.t, s: request.s, ok: true, v: await dispatch(store, request.op, request.args) };
    } catch (err) {
      const e = toChannelError(err);
      if (e.code === 'family_revoked') {
        const family = familyOf(request);
        if (family !== undefined) e.family = family;
      }
      reply = { t: request.t, s: request.s, ok: false, e };
    }
    if (!serving) return;
    try {
      channel.postMessage(reply);
    } catch (err) {
      // Only a value that cannot be cloned ends up here; answer rather than let the caller time out.
      channel.postMessage({ t: request.t, s: request.s, ok: false, e: toChannelError(err) } satisfies ChannelReply);
    }
  };

  channel.onmessage = (event: MessageEvent) => {
    // Replies of other servers and requests of unknown operations are not ours to answer.
    if (isRequest(event.data)) void answer(event.data);
  };
  return () => {
    if (!serving) return;
    serving = false;
    channel.close();
  };
}

interface PendingCall {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/** Sequence numbers are per thread, shared by every ChannelStore on it, so `(t, s)` is unique. */
let lastSeq = 0;

export interface ChannelStoreOptions {
  /** A call with no reply after this long rejects with StoreUnavailableError. Default 2000 ms. */
  timeoutMs?: number;
}

/**
 * {@link Store} for a worker thread, backed by the main thread's {@link MemoryStore} through
 * {@link serveMemoryStore}. Same semantics, one structured-clone hop away.
 *
 * @example
 * ```ts
 * const store = new ChannelStore(workerData.storeChannel);
 * const found = await store.consume({ kind: 'code', id: hashHandle(code) });
 * ```
 */
export class ChannelStore implements Store {
  readonly #channel: BroadcastChannel;
  readonly #timeoutMs: number;
  readonly #pending = new Map<number, PendingCall>();
  #closed = false;

  constructor(channelName: string, options: ChannelStoreOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? defaultChannelTimeoutMs;
    this.#channel = new BroadcastChannel(channelName);
    this.#channel.unref();
    this.#channel.onmessage = (event: MessageEvent) => this.#receive(event.data);
  }

  set<T>(key: StoreKey, value: T, ttlMs: number): Promise<void> {
    return this.#call('set', [key, value, ttlMs]);
  }

  get<T>(key: StoreKey): Promise<T | null> {
    return this.#call('get', [key]);
  }

  delete(key: StoreKey): Promise<boolean> {
    return this.#call('delete', [key]);
  }

  consume<T>(key: StoreKey): Promise<ConsumeResult<T>> {
    return this.#call('consume', [key]);
  }

  rotate<T, U, V = unknown>(oldKey: StoreKey, newKey: StoreKey, newValue: U, ttlMs: number, companion?: CompanionRecord<V>): Promise<ConsumeResult<T>> {
    return this.#call('rotate', companion === undefined ? [oldKey, newKey, newValue, ttlMs] : [oldKey, newKey, newValue, ttlMs, companion]);
  }

  revokeFamily(family: string, ttlMs: number): Promise<number> {
    return this.#call('revokeFamily', [family, ttlMs]);
  }

  isFamilyRevoked(family: string): Promise<boolean> {
    return this.#call('isFamilyRevoked', [family]);
  }

  familyRecords<T>(family: string, kind: RecordKind): Promise<T[]> {
    return this.#call('familyRecords', [family, kind]);
  }

  putIfAbsent<T>(key: StoreKey, value: T, ttlMs: number): Promise<T> {
    return this.#call('putIfAbsent', [key, value, ttlMs]);
  }

  increment(name: string, windowMs: number): Promise<CounterResult> {
    return this.#call('increment', [name, windowMs]);
  }

  resetCounter(name: string): Promise<void> {
    return this.#call('resetCounter', [name]);
  }

  ping(): Promise<void> {
    return this.#call('ping', []);
  }

  /** Closes this thread's end of the channel; the served store stays open. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#channel.close();
    for (const [seq, call] of this.#pending) {
      clearTimeout(call.timer);
      this.#pending.delete(seq);
      call.reject(new StoreUnavailableError('channel store closed'));
    }
  }

  #call<R>(op: StoreOp, args: unknown[]): Promise<R> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('channel store closed'));
    const s = ++lastSeq;
    return new Promise<R>((resolve, reject) => {
      // Not unref'd: a thread awaiting the store stays up until the answer or the timeout.
      const timer = setTimeout(() => {
        this.#pending.delete(s);
        reject(new StoreUnavailableError(`no answer to ${op} on the store channel within ${this.#timeoutMs} ms`));
      }, this.#timeoutMs);
      this.#pending.set(s, { resolve: resolve as (value: unknown) => void, reject, timer });
      try {
        this.#channel.postMessage({ t: threadId, s, op, args } satisfies ChannelRequest);
      } catch (err) {
        // A value that cannot be cloned (a function, a socket): a caller bug, not an outage.
        clearTimeout(timer);
        this.#pending.delete(s);
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  #receive(message: unknown): void {
    // Requests of other workers and replies meant for other threads pass by here too.
    if (!isReply(message) || message.t !== threadId) return;
    const call = this.#pending.get(message.s);
    if (call === undefined) return;
    this.#pending.delete(message.s);
    clearTimeout(call.timer);
    if (message.ok) call.resolve(message.v);
    else call.reject(fromChannelError(message.e));
  }
}
