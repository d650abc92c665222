/**
 * The current {@link PublishedKeySet} in shared memory, so every worker thread (those running and
 * those Piscina starts later to replace one) reads the same set without a message and without a
 * restart. The gateway thread is the only writer.
 *
 * A sequence lock: the writer makes the sequence odd, writes, then makes it even again; a reader
 * copies the bytes between two reads of the same even sequence. Checking for a new set is one
 * `Atomics.load`, so a worker can check before every batch at no cost that grows.
 */
import type { PublishedKeySet } from '../core/key_set.js';

const sequenceSlot = 0;
const lengthSlot = 1;
const headerBytes = 2 * Int32Array.BYTES_PER_ELEMENT;

/** Room for about a hundred RSA-2048 private JWKs; a set that does not fit is refused. */
export const defaultKeySetCellBytes = 512 * 1024;

export class KeySetCell {
  private readonly header: Int32Array;
  private readonly body: Uint8Array;

  /** `buffer` comes from {@link KeySetCell.create} on the gateway thread (Piscina `workerData`). */
  constructor(readonly buffer: SharedArrayBuffer) {
    this.header = new Int32Array(buffer, 0, 2);
    this.body = new Uint8Array(buffer, headerBytes);
  }

  static create(bytes = defaultKeySetCellBytes): KeySetCell {
    return new KeySetCell(new SharedArrayBuffer(headerBytes + bytes));
  }

  /** Publishes a new set to every thread; the gateway thread only. */
  write(set: PublishedKeySet): void {
    const encoded = new TextEncoder().encode(JSON.stringify(set));
    if (encoded.length > this.body.length) {
      throw new RangeError(`the key set (${encoded.length} bytes) does not fit its ${this.body.length}-byte cell`);
    }
    Atomics.add(this.header, sequenceSlot, 1);
    this.body.set(encoded);
    Atomics.store(this.header, lengthSlot, encoded.length);
    Atomics.add(this.header, sequenceSlot, 1);
  }

  /** The version of the set in the cell now: 0 before the first write. */
  get version(): number {
    return Atomics.load(this.header, sequenceSlot) >>> 1;
  }

  /** The set and its version when the version differs from `seen`, else `null`. */
  readIfChanged(seen: number): { version: number; set: PublishedKeySet } | null {
    for (;;) {
      const before = Atomics.load(this.header, sequenceSlot);
      // While a write is in progress the sequence still names the version it replaces.
      if (before >>> 1 === seen) return null;
      if ((before & 1) === 1) continue; // a write in progress (microseconds) of a newer set
      const length = Atomics.load(this.header, lengthSlot);
      const copy = this.body.slice(0, length);
      if (Atomics.load(this.header, sequenceSlot) !== before) continue;
      return { version: before >>> 1, set: JSON.parse(new TextDecoder().decode(copy)) as PublishedKeySet };
    }
  }
}
