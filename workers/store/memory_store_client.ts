/**
 * The in-memory store seen from a worker thread: a {@link Store} whose every call is one request
 * on this worker's own `MessagePort` to the main thread's `MemoryStore`, answered on the same
 * port (the wire is `wire/store_bridge.ts`; the main-thread half is
 * `gateway/dispatch/memory_store_host.ts`). Same semantics as the store it reaches, one
 * structured-clone hop away. Record values are packed and unpacked here, on the worker
 * (`packing_store.ts`): what crosses is one string per record.
 */
import { MessageChannel, parentPort, type MessagePort } from 'node:worker_threads';
import {
  storeMethods,
  toBridgeError,
  type BridgeError,
  type BridgeRequest,
  type BridgeResponse,
  type StoreMethod,
  type StorePortOffer,
} from '../../wire/store_bridge.js';
import { PackingStore, type PackedRecords } from '../../core/store/packing_store.js';
import { FamilyRevokedError, StoreUnavailableError, type Store } from '../../core/store/store.js';

/** A call with no answer after this long rejects with StoreUnavailableError, unless told otherwise. */
export const defaultBridgeTimeoutMs = 2000;

export interface BridgedStoreOptions {
  /** A call with no answer after this long rejects with StoreUnavailableError. Default 2000 ms. */
  timeoutMs?: number;
}

/**
 * The store of a Piscina worker when the store is `memory`: opens a channel, offers one end to
 * the main thread on `parentPort` (where the gateway's `MemoryStoreHost` serves it) and calls the
 * store over the other. Calls made before the main thread picks the port up wait in the port.
 *
 * @example
 * ```ts
 * const store = connectMemoryStoreHost();
 * const found = await store.consume({ kind: 'code', id: hashHandle(code) });
 * ```
 */
export function connectMemoryStoreHost(options: BridgedStoreOptions = {}): Store {
  if (parentPort === null) throw new Error('the in-memory store lives on the main thread; only a worker thread connects to it');
  const { port1, port2 } = new MessageChannel();
  parentPort.postMessage({ kind: 'tessera.store-port', port: port2 } satisfies StorePortOffer, [port2]);
  return createBridgedStore(port1, options);
}

/**
 * A {@link Store} over `port`, whose other end a `MemoryStoreHost` serves. `close()` closes the
 * port, not the store behind it.
 */
export function createBridgedStore(port: MessagePort, options: BridgedStoreOptions = {}): Store {
  const caller = new PortCaller(port, options.timeoutMs ?? defaultBridgeTimeoutMs);
  // The methods are the bridge's list, each a call with the (packed) arguments as given: one
  // generic proxy instead of a hand-written forwarder per method.
  const records: Partial<Record<keyof Store, unknown>> = { close: () => caller.close() };
  for (const method of storeMethods) records[method] = (...args: unknown[]) => caller.call(method, args);
  return new PackingStore(records as PackedRecords);
}

interface PendingCall {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  method: StoreMethod;
  /** `performance.now()` after which the call fails. */
  deadline: number;
}

/**
 * Requests out, responses in, matched by id; every call settles, at the latest on its timeout.
 * The calls made in one turn of the event loop leave as one message (a worker runs a batch of
 * requests at once, so their store calls come together): one wake-up of the main thread for all.
 * One timer watches every pending call: all share one timeout, so the oldest call's deadline is
 * the next to come, and the timer runs only while calls are pending (it keeps the thread alive
 * for them, never longer).
 */
class PortCaller {
  readonly #port: MessagePort;
  readonly #timeoutMs: number;
  // Insertion order is deadline order.
  readonly #pending = new Map<number, PendingCall>();
  #timer: NodeJS.Timeout | undefined;
  #outbox: BridgeRequest[] = [];
  #lastId = 0;
  #closed = false;

  constructor(port: MessagePort, timeoutMs: number) {
    this.#port = port;
    this.#timeoutMs = timeoutMs;
    port.on('message', (responses: BridgeResponse[]) => {
      for (const response of responses) this.#receive(response);
    });
    // The main thread went away (the pool is being destroyed): nothing will answer any more.
    port.once('close', () => this.#shut('the store host closed the port'));
    // The port never keeps a thread alive by itself; a pending call's timer does.
    port.unref();
  }

  call(method: StoreMethod, args: unknown[]): Promise<unknown> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('bridged store closed'));
    const id = ++this.#lastId;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, method, deadline: performance.now() + this.#timeoutMs });
      this.#timer ??= setTimeout(this.#expire, this.#timeoutMs);
      if (this.#outbox.push({ id, method, args }) === 1) setImmediate(this.#flush);
    });
  }

  /** Fails the calls past their deadline, then waits for the next one's. */
  readonly #expire = (): void => {
    this.#timer = undefined;
    const now = performance.now();
    for (const [id, call] of this.#pending) {
      if (call.deadline > now) {
        this.#timer = setTimeout(this.#expire, call.deadline - now);
        return;
      }
      this.#pending.delete(id);
      call.reject(new StoreUnavailableError(`no answer to ${call.method} from the main thread within ${this.#timeoutMs} ms`));
    }
  };

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#shut('bridged store closed');
    this.#port.close();
  }

  readonly #flush = (): void => {
    const requests = this.#outbox;
    this.#outbox = [];
    if (this.#closed) return;
    try {
      this.#port.postMessage(requests);
    } catch {
      // Some value cannot be cloned (a function, a socket): a caller bug, not an outage. Only
      // the calls that carry one fail, at once rather than on their timeout.
      for (const request of requests) {
        try {
          this.#port.postMessage([request]);
        } catch (err) {
          this.#settle(request.id, { id: request.id, ok: false, error: toBridgeError(err) });
        }
      }
    }
  };

  #shut(reason: string): void {
    this.#closed = true;
    this.#stopTimer();
    for (const [id, call] of this.#pending) {
      this.#pending.delete(id);
      call.reject(new StoreUnavailableError(reason));
    }
  }

  #stopTimer(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #receive(response: BridgeResponse): void {
    this.#settle(response.id, response);
  }

  #settle(id: number, response: BridgeResponse): void {
    const call = this.#pending.get(id);
    // A call that already timed out.
    if (call === undefined) return;
    this.#pending.delete(id);
    if (this.#pending.size === 0) this.#stopTimer();
    if (response.ok) call.resolve(response.value);
    else call.reject(fromBridgeError(response.error));
  }
}

function fromBridgeError(e: BridgeError): Error {
  switch (e.code) {
    case 'family_revoked':
      return new FamilyRevokedError(e.family ?? '');
    case 'store_unavailable':
      return new StoreUnavailableError(e.message);
    case 'error':
      return e.name === 'RangeError' ? new RangeError(e.message) : e.name === 'TypeError' ? new TypeError(e.message) : new Error(e.message);
  }
}
