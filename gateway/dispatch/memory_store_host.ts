/**
 * The main-thread half of the memory store's thread bridge (the wire is
 * `wire/store_bridge.ts`, the worker half `workers/store/memory_store_client.ts`):
 * answers each worker's store calls on that worker's own port, with the records of the one store
 * the main thread holds. Record values arrive packed and leave packed: the worker packs and
 * unpacks them, so this thread, which also runs every HTTP exchange, does neither.
 */
import type { MessagePort } from 'node:worker_threads';
import { isStoreMethod, isStorePortOffer, toBridgeError, type BridgeRequest, type BridgeResponse } from '../../wire/store_bridge.js';
import type { MemoryStore } from '../../core/store/memory_store.js';
import type { PackedRecords } from '../../core/store/packing_store.js';

type AnyStoreMethod = (...args: unknown[]) => Promise<unknown>;

/**
 * Serves `store` (the gateway's `MemoryStore`) to the worker threads. {@link acceptOffer} is a
 * pool's `'message'` listener: every worker the pool starts, a replacement for a crashed one
 * included, offers its port there when it boots.
 *
 * @example
 * ```ts
 * const host = new MemoryStoreHost(store);
 * pool.on('message', host.acceptOffer);
 * // …
 * host.close();
 * ```
 */
export class MemoryStoreHost {
  readonly #store: PackedRecords;
  readonly #ports = new Set<MessagePort>();
  #closed = false;

  constructor(store: MemoryStore) {
    this.#store = store.records;
  }

  /** Serves the port of a {@link StorePortOffer}; any other message is not the host's. */
  readonly acceptOffer = (message: unknown): void => {
    if (isStorePortOffer(message)) this.serve(message.port);
  };

  /** Answers every request that arrives on `port` until the port or the host closes. */
  serve(port: MessagePort): void {
    if (this.#closed) {
      port.close();
      return;
    }
    this.#ports.add(port);
    port.on('message', (requests: BridgeRequest[]) => void this.#answer(port, requests));
    // A worker that exits closes its end, and with it this one.
    port.once('close', () => this.#ports.delete(port));
    // Serving never keeps the process alive by itself.
    port.unref();
  }

  /** Stops serving: closes every port (pending worker calls reject at once). Leaves the store open. */
  close(): void {
    this.#closed = true;
    for (const port of this.#ports) port.close();
    this.#ports.clear();
  }

  /** Answers one message's requests with one message, in the same order. */
  async #answer(port: MessagePort, requests: BridgeRequest[]): Promise<void> {
    // The memory store settles every call without I/O, so waiting for all delays none.
    const responses = await Promise.all(requests.map((request) => this.#call(request)));
    if (this.#closed) return;
    try {
      port.postMessage(responses);
    } catch {
      // Only a result that cannot be cloned ends up here; answer each call rather than let them
      // all time out.
      for (const response of responses) {
        try {
          port.postMessage([response]);
        } catch (err) {
          port.postMessage([{ id: response.id, ok: false, error: toBridgeError(err) }] satisfies BridgeResponse[]);
        }
      }
    }
  }

  async #call({ id, method, args }: BridgeRequest): Promise<BridgeResponse> {
    try {
      // Requests come from our own workers; the store validates what they carry.
      if (!isStoreMethod(method)) throw new TypeError(`${String(method)} is not a store method`);
      return { id, ok: true, value: await (this.#store[method] as AnyStoreMethod).apply(this.#store, args) };
    } catch (err) {
      return { id, ok: false, error: toBridgeError(err) };
    }
  }
}
