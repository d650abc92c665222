/**
 * A {@link Store} of values over a store of packed records: every record value is packed with
 * msgpackr (`record_codec.ts`, into a latin1 string) on the way in and unpacked on the way out, on
 * the caller's thread.
 *
 * The memory store is one: its records live as bytes on the main thread (`memory_records.ts`),
 * and a worker thread reaches them through the thread bridge (`memory_store_client.ts`) with its
 * values packed by the worker. So the main thread, which also runs every HTTP exchange, neither
 * packs nor unpacks, and a record crosses the bridge as one string instead of an object graph
 * to clone (docs/decisions/0015-refresh-cuts-random-pool-and-packed-values.md).
 */
import { packRecordText, unpackRecordText } from './record_codec.js';
import { companionList } from './store.js';
import type {
  ChainChecks,
  ChainLookup,
  ChainPolicy,
  ChainRedeemPolicy,
  ChainRedemption,
  ChainRotation,
  CompanionRecord,
  ConsumeResult,
  CounterResult,
  FamilyPage,
  FamilyScan,
  DerivedRecord,
  RecordKind,
  RedeemChecks,
  Redemption,
  Replacement,
  Store,
  StoreKey,
} from './store.js';

/**
 * A {@link Store} whose record values are msgpack bytes in a latin1 string
 * (`record_codec.ts`'s `packRecordText`), given and returned as such. Strings are immutable, so
 * it keeps and hands out the very strings, no copies.
 */
export type PackedRecords = Store;

/** Packs values into `records` and unpacks what it returns; every other call passes through. */
export class PackingStore implements Store {
  readonly #records: PackedRecords;

  constructor(records: PackedRecords) {
    this.#records = records;
  }

  set<T>(key: StoreKey, value: T, ttlMs: number): Promise<void> {
    return this.#records.set(key, packRecordText(value), ttlMs);
  }

  async get<T>(key: StoreKey): Promise<T | null> {
    const bytes = await this.#records.get<string>(key);
    return bytes === null ? null : unpackRecordText<T>(bytes);
  }

  delete(key: StoreKey): Promise<boolean> {
    return this.#records.delete(key);
  }

  async consume<T>(key: StoreKey): Promise<ConsumeResult<T>> {
    return unpackOutcome<T>(await this.#records.consume<string>(key));
  }

  async rotate<T, U, V = unknown>(
    oldKey: StoreKey,
    newKey: StoreKey,
    newValue: U,
    ttlMs: number,
    companion?: CompanionRecord<V> | readonly CompanionRecord<unknown>[],
  ): Promise<ConsumeResult<T>> {
    const companions = companionList(companion).map(packCompanion);
    const outcome = await this.#records.rotate<string, string>(oldKey, newKey, packRecordText(newValue), ttlMs, companions);
    return unpackOutcome<T>(outcome);
  }

  async rotateChain<T, U, R = unknown>(
    oldKey: StoreKey,
    newKey: StoreKey,
    newValue: U,
    ttlMs: number,
    companions: readonly CompanionRecord<unknown>[],
    chain: ChainPolicy<R>,
  ): Promise<ChainRotation<T>> {
    const packedChain: ChainPolicy<string> = { ...chain, retry: chain.retry === undefined ? undefined : packRecordText(chain.retry) };
    if (packedChain.retry === undefined) delete (packedChain as { retry?: string }).retry;
    const outcome = await this.#records.rotateChain<string, string, string>(
      oldKey,
      newKey,
      packRecordText(newValue),
      ttlMs,
      companions.map(packCompanion),
      packedChain,
    );
    return outcome.status === 'limited' ? outcome : unpackOutcome<T>(outcome);
  }

  async chainLookup<T, R = unknown>(oldKey: StoreKey, graceMs: number, chain: Omit<ChainPolicy, 'retry'>): Promise<ChainLookup<T, R>> {
    const found = await this.#records.chainLookup<string, string>(oldKey, graceMs, chain);
    switch (found.status) {
      case 'retry':
        return unpackRetry<T, R>(found);
      case 'replayed':
        return { status: 'replayed', value: unpackRecordText<T>(found.value) };
      default:
        return found;
    }
  }

  async redeemRecord<T>(
    key: StoreKey,
    checks: RedeemChecks,
    derived: DerivedRecord | undefined,
    companions: readonly CompanionRecord<unknown>[],
  ): Promise<Redemption<T>> {
    // The derived record's `set` values packed, as every value the records hold.
    const packedDerived =
      derived === undefined
        ? undefined
        : { ...derived, set: Object.fromEntries(Object.entries(derived.set).map(([name, value]) => [name, packRecordText(value)])) };
    const found = await this.#records.redeemRecord<string>(key, checks, packedDerived, companions.map(packCompanion));
    switch (found.status) {
      case 'consumed':
        return { status: 'consumed', value: unpackRecordText<T>(found.value), derived: found.derived };
      case 'unchecked':
      case 'replayed':
        return { status: found.status, value: unpackRecordText<T>(found.value) };
      default:
        return found;
    }
  }

  async redeemChain<T, R = unknown>(
    oldKey: StoreKey,
    newKey: StoreKey,
    companions: readonly CompanionRecord<unknown>[],
    checks: ChainChecks,
    chain: ChainRedeemPolicy<R>,
  ): Promise<ChainRedemption<T, R>> {
    const packedChain: ChainRedeemPolicy<string> = { ...chain, retry: chain.retry === undefined ? undefined : packRecordText(chain.retry) };
    if (packedChain.retry === undefined) delete (packedChain as { retry?: string }).retry;
    const found = await this.#records.redeemChain<string, string>(oldKey, newKey, companions.map(packCompanion), checks, packedChain);
    switch (found.status) {
      case 'consumed':
      case 'unchecked':
      case 'replayed':
        return { status: found.status, value: unpackRecordText<T>(found.value) };
      case 'retry':
        return unpackRetry<T, R>(found);
      default:
        return found;
    }
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
    return (await this.#records.familyRecords<string>(family, kind)).map((bytes) => unpackRecordText<T>(bytes));
  }

  async listFamily<T>(family: string, after: string | undefined, limit: number): Promise<FamilyPage<T>> {
    const page = await this.#records.listFamily<string>(family, after, limit);
    return { records: page.records.map((r) => ({ name: r.name, value: unpackRecordText<T>(r.value) })), next: page.next };
  }

  async scanFamily<T>(family: string, kind: RecordKind, cursor: string | undefined, count: number): Promise<FamilyScan<T>> {
    const scan = await this.#records.scanFamily<string>(family, kind, cursor, count);
    return { records: scan.records.map((bytes) => unpackRecordText<T>(bytes)), cursor: scan.cursor };
  }

  listRecords(keys: readonly StoreKey[]): Promise<number> {
    return this.#records.listRecords(keys);
  }

  async putIfAbsent<T>(key: StoreKey, value: T, ttlMs: number): Promise<T> {
    return unpackRecordText<T>(await this.#records.putIfAbsent(key, packRecordText(value), ttlMs));
  }

  async replaceIfUnchanged<T>(key: StoreKey, expected: T, next: T | null, ttlMs: number): Promise<Replacement<T>> {
    const found = await this.#records.replaceIfUnchanged<string>(
      key,
      packRecordText(expected),
      next === null ? null : packRecordText(next),
      ttlMs,
    );
    return found.status === 'changed' ? { status: 'changed', current: unpackRecordText<T>(found.current) } : found;
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

function packCompanion(record: CompanionRecord<unknown>): CompanionRecord<string> {
  return { key: record.key, value: packRecordText(record.value), ttlMs: record.ttlMs };
}

function unpackOutcome<T>(outcome: ConsumeResult<string>): ConsumeResult<T> {
  return outcome.status === 'missing' ? outcome : { status: outcome.status, value: unpackRecordText<T>(outcome.value) };
}

function unpackRetry<T, R>(found: { successorId: string; successor: string; retry: string }): ChainLookup<T, R> {
  return {
    status: 'retry',
    successorId: found.successorId,
    successor: unpackRecordText<T>(found.successor),
    retry: (found.retry === '' ? null : unpackRecordText<R>(found.retry)) as R,
  };
}
