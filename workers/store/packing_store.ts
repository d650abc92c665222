/**
 * A {@link Store} of values over a store of packed records: every record value is packed with
 * msgpackr (`record_codec.ts`) on the way in and unpacked on the way out, on the caller's thread.
 *
 * The memory store is one: its records live as bytes on the main thread (`memory_records.ts`),
 * and a worker thread reaches them through the thread bridge (`memory_store_client.ts`) with its
 * values packed by the worker. So the main thread, which also runs every HTTP exchange, neither
 * packs nor unpacks, and a record crosses the bridge as one byte array instead of an object
 * graph to clone (bench/README.md, "Refresh on Redis and memory: what the cuts bought").
 */
import { packRecordBytes, unpackRecord } from './record_codec.js';
import { companionList } from './store.js';
import type { CompanionRecord, ConsumeResult, CounterResult, RecordKind, Store, StoreKey } from './store.js';

/**
 * A {@link Store} whose record values are msgpack bytes (`Uint8Array`), given and returned as
 * such. It never keeps a reference to an array it was given in a way the caller can still change
 * (the bridge hands over clones), and it may return its own arrays: only {@link PackingStore}
 * and the bridge read them, and both copy.
 */
export type PackedRecords = Store;

/** Packs values into `records` and unpacks what it returns; every other call passes through. */
export class PackingStore implements Store {
  readonly #records: PackedRecords;

  constructor(records: PackedRecords) {
    this.#records = records;
  }

  set<T>(key: StoreKey, value: T, ttlMs: number): Promise<void> {
    return this.#records.set(key, packRecordBytes(value), ttlMs);
  }

  async get<T>(key: StoreKey): Promise<T | null> {
    const bytes = await this.#records.get<Uint8Array>(key);
    return bytes === null ? null : unpackRecord<T>(bytes);
  }

  delete(key: StoreKey): Promise<boolean> {
    return this.#records.delete(key);
  }

  async consume<T>(key: StoreKey): Promise<ConsumeResult<T>> {
    return unpackOutcome<T>(await this.#records.consume<Uint8Array>(key));
  }

  async rotate<T, U, V = unknown>(
    oldKey: StoreKey,
    newKey: StoreKey,
    newValue: U,
    ttlMs: number,
    companion?: CompanionRecord<V> | readonly CompanionRecord<unknown>[],
  ): Promise<ConsumeResult<T>> {
    const companions = companionList(companion).map(packCompanion);
    const outcome = await this.#records.rotate<Uint8Array, Uint8Array>(oldKey, newKey, packRecordBytes(newValue), ttlMs, companions);
    return unpackOutcome<T>(outcome);
  }

  writeWhileLive<V>(guards: readonly StoreKey[], record?: CompanionRecord<V>): Promise<boolean> {
    return this.#records.writeWhileLive(guards, record === undefined ? undefined : packCompanion(record));
  }

  revokeFamily(family: string, ttlMs: number): Promise<number> {
    return this.#records.revokeFamily(family, ttlMs);
  }

  isFamilyRevoked(family: string): Promise<boolean> {
    return this.#records.isFamilyRevoked(family);
  }

  async familyRecords<T>(family: string, kind: RecordKind): Promise<T[]> {
    return (await this.#records.familyRecords<Uint8Array>(family, kind)).map((bytes) => unpackRecord<T>(bytes));
  }

  async putIfAbsent<T>(key: StoreKey, value: T, ttlMs: number): Promise<T> {
    return unpackRecord<T>(await this.#records.putIfAbsent(key, packRecordBytes(value), ttlMs));
  }

  increment(name: string, windowMs: number, by?: number): Promise<CounterResult> {
    return this.#records.increment(name, windowMs, by);
  }

  resetCounter(name: string): Promise<void> {
    return this.#records.resetCounter(name);
  }

  ping(): Promise<void> {
    return this.#records.ping();
  }

  checkReady(): Promise<void> {
    return this.#records.checkReady();
  }

  close(): Promise<void> {
    return this.#records.close();
  }
}

function packCompanion(record: CompanionRecord<unknown>): CompanionRecord<Uint8Array> {
  return { key: record.key, value: packRecordBytes(record.value), ttlMs: record.ttlMs };
}

function unpackOutcome<T>(outcome: ConsumeResult<Uint8Array>): ConsumeResult<T> {
  return outcome.status === 'missing' ? outcome : { status: outcome.status, value: unpackRecord<T>(outcome.value) };
}
