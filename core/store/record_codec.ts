/**
 * How store records become bytes (docs/storage.md: records are packed with msgpackr).
 *
 * One `Packr` per thread: this module is evaluated once per thread, so every Piscina worker and
 * the main thread each get their own instance and never share its scratch buffer.
 *
 * `useRecords: false` keeps the bytes self-describing: a record written by one process (or by an
 * older build) decodes on any other without a shared structure table.
 */
import { Packr } from 'msgpackr';

const packr = new Packr({ useRecords: false });

/**
 * Packs a value into a string holding its bytes one per character (latin1): what crosses a
 * thread by structured clone and what the memory store keeps. A string is one immutable object
 * the garbage collector never scans into, where a `Uint8Array` is an object and an `ArrayBuffer`
 * with memory outside the heap: moving 1.5M records of 180 bytes from a worker into a main-thread
 * Map and back cost 2.8-3.1 µs each as strings against 7.5-7.7 µs as byte arrays, with the worst
 * event-loop stall 61 ms against 110-147 ms (`bench/bridge_values.ts`,
 * docs/decisions/0015-refresh-cuts-random-pool-and-packed-values.md).
 */
export function packRecordText(value: unknown): string {
  return packr.pack(value).toString('latin1');
}

/** Unpacks a string written by {@link packRecordText}. */
export function unpackRecordText<T>(text: string): T {
  return packr.unpack(Buffer.from(text, 'latin1')) as T;
}

/**
 * Packs a value behind `header` leading bytes (left zero for the caller to fill), in one copy:
 * msgpackr's `pack()` returns a view of a buffer it reuses for the next call, so the bytes are
 * copied before they are stored.
 * The Redis store keeps its consumed marker in the first byte.
 */
export function packRecordWithHeader(value: unknown, header: number): Buffer {
  const body = packr.pack(value);
  const out = Buffer.allocUnsafe(header + body.length);
  out.fill(0, 0, header);
  out.set(body, header);
  return out;
}

/** Packs a value into bytes of its own (a copy: the next `pack()` reuses msgpackr's buffer), e.g. a script's packed arguments. */
export function packBytes(value: unknown): Buffer {
  return Buffer.from(packr.pack(value));
}

/** Unpacks the body after a header written by {@link packRecordWithHeader}, on any thread. */
export function unpackRecord<T>(bytes: Uint8Array): T {
  return packr.unpack(bytes) as T;
}
