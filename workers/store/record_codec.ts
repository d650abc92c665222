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
 * Packs a value into a Buffer the caller owns.
 *
 * msgpackr's `pack()` returns a view of a buffer it reuses for the next call, so the bytes are
 * copied before they are stored or handed to another thread.
 */
export function packRecord(value: unknown): Buffer {
  return Buffer.from(packr.pack(value));
}

/**
 * Packs a value into a `Uint8Array` of its own `ArrayBuffer`, exactly as long as the bytes: what
 * crosses a thread by structured clone (a small `Buffer` is a view of Node's shared 8 KiB pool,
 * and a clone copies the whole buffer under a view).
 */
export function packRecordBytes(value: unknown): Uint8Array {
  return new Uint8Array(packr.pack(value));
}

/**
 * Packs a value behind `header` leading bytes (left zero for the caller to fill), in one copy.
 * The Redis store keeps its consumed marker in the first byte.
 */
export function packRecordWithHeader(value: unknown, header: number): Buffer {
  const body = packr.pack(value);
  const out = Buffer.allocUnsafe(header + body.length);
  out.fill(0, 0, header);
  out.set(body, header);
  return out;
}

/** Unpacks bytes written by {@link packRecord} (or the body after a header) on any thread. */
export function unpackRecord<T>(bytes: Uint8Array): T {
  return packr.unpack(bytes) as T;
}
