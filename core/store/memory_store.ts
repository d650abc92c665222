/**
 * The embedded store for one process (docs/storage.md, `"store": { "type": "memory" }`): its
 * records (`memory_records.ts`) and the packing of their values on the calling thread
 * (`packing_store.ts`).
 *
 * Worker threads reach the same records on the main thread through the thread bridge
 * (`memory_store_client.ts`, served by the gateway's `MemoryStoreHost` with {@link
 * MemoryStore.records}), packing their values themselves.
 */
import { MemoryRecords, type MemoryStoreOptions } from './memory_records.js';
import { PackingStore, type PackedRecords } from './packing_store.js';

export type { MemoryStoreOptions } from './memory_records.js';

/**
 * In-process `Store`.
 *
 * @example
 * ```ts
 * const store = new MemoryStore();
 * pool.on('message', new MemoryStoreHost(store).acceptOffer); // let worker threads use it
 * ```
 */
export class MemoryStore extends PackingStore {
  readonly #records: MemoryRecords;

  constructor(options: MemoryStoreOptions = {}) {
    const records = new MemoryRecords(options);
    super(records);
    this.#records = records;
  }

  /** The same records, values packed: what the thread bridge serves to worker threads. */
  get records(): PackedRecords {
    return this.#records;
  }

  /** Records held right now, expired ones not yet swept included (for metrics and tests). */
  get size(): number {
    return this.#records.size;
  }

  /** Records `listFamily` has looked at since start (tests: a page's cost). */
  get listingReads(): number {
    return this.#records.listingReads;
  }

  /** Device-code records dropped at the cap so far (a metric). */
  get evicted(): number {
    return this.#records.evicted;
  }
}
