/**
 * The store-kept API resources (docs/configuration.md, `clientRegistry`) in shared memory, so
 * every worker thread validates scopes and names audiences with the same set the gateway loaded,
 * without a message and without a restart; the gateway thread is the only writer. The same
 * sequence lock as the key set's (`key_set_cell.ts`): checking for a change is one `Atomics.load`
 * per batch, and version 0 (nothing written: no store-kept resource) costs a worker nothing more.
 */
import type { ApiResourceConfig } from '../core/worker_config.js';

/** What the workers need of the store-kept API resources: names and scopes, never secrets. */
export interface StoredApiResourceSet {
  readonly resources: readonly ApiResourceConfig[];
}

const sequenceSlot = 0;
const lengthSlot = 1;
const headerBytes = 2 * Int32Array.BYTES_PER_ELEMENT;

/** Room for about a thousand resources with a few scopes each; a set that does not fit is refused. */
export const defaultApiResourceCellBytes = 256 * 1024;

export class ApiResourceCell {
  private readonly header: Int32Array;
  private readonly body: Uint8Array;

  /** `buffer` comes from {@link ApiResourceCell.create} on the gateway thread (worker boot data). */
  constructor(readonly buffer: SharedArrayBuffer) {
    this.header = new Int32Array(buffer, 0, 2);
    this.body = new Uint8Array(buffer, headerBytes);
  }

  static create(bytes = defaultApiResourceCellBytes): ApiResourceCell {
    return new ApiResourceCell(new SharedArrayBuffer(headerBytes + bytes));
  }

  /** Publishes a new set to every thread; the gateway thread only. */
  write(set: StoredApiResourceSet): void {
    const encoded = new TextEncoder().encode(JSON.stringify(set));
    if (encoded.length > this.body.length) {
      throw new RangeError(`the API resources (${encoded.length} bytes) do not fit their ${this.body.length}-byte cell`);
    }
    Atomics.add(this.header, sequenceSlot, 1);
    this.body.set(encoded);
    Atomics.store(this.header, lengthSlot, encoded.length);
    Atomics.add(this.header, sequenceSlot, 1);
  }

  /** The set and its version when the version differs from `seen`, else `null`. */
  readIfChanged(seen: number): { version: number; set: StoredApiResourceSet } | null {
    for (;;) {
      const before = Atomics.load(this.header, sequenceSlot);
      if (before >>> 1 === seen) return null;
      if ((before & 1) === 1) continue; // a write in progress (microseconds)
      const length = Atomics.load(this.header, lengthSlot);
      const copy = this.body.slice(0, length);
      if (Atomics.load(this.header, sequenceSlot) !== before) continue;
      return { version: before >>> 1, set: JSON.parse(new TextDecoder().decode(copy)) as StoredApiResourceSet };
    }
  }
}
