/**
 * The records of the embedded store for one process (docs/storage.md, `"store": { "type":
 * "memory" }`), held as msgpack bytes in latin1 strings: `MemoryStore` (`memory_store.ts`) packs and unpacks the
 * values on the thread that calls it, and the worker threads pack theirs before they cross the
 * thread bridge, so the main thread holding these records never packs or unpacks.
 *
 * Every operation runs synchronously between two awaits, so on one event loop it is atomic by
 * construction: that is what makes consume-once and rotate hold here without locks. Worker
 * threads reach the one instance on the main thread through its thread bridge
 * (`memory_store_client.ts`, served by the gateway's `MemoryStoreHost`).
 *
 * Semantics match `RedisStore` rule for rule (the conformance suite runs against `MemoryStore`
 * and the bridge): a consumed record stays until its TTL ends, a revoked family refuses writes,
 * counters are fixed windows.
 */
import {
  FamilyRevokedError,
  StoreUnavailableError,
  assertFamilyName,
  assertChain,
  assertListable,
  assertListedName,
  assertPageLimit,
  assertOneSlot,
  assertRotatable,
  companionList,
  retiredFilterBits,
  retiredFilterPositions,
  toTtlMs,
} from './store.js';
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
  ListedRecord,
  DerivedRecord,
  RecordKind,
  RedeemChecks,
  Redemption,
  Replacement,
  StoreKey,
} from './store.js';
import type { PackedRecords } from './packing_store.js';
import { checkChainRecord, checkRedeemRecord, derivedRecordSpec } from './record_fields.js';

export interface MemoryStoreOptions {
  /**
   * Clock in milliseconds on any monotonic scale; tests inject a fake one to expire records
   * without waiting. Defaults to `performance.now()`, which wall-clock changes do not move.
   */
  now?: () => number;
  /** How often expired records are swept; lazy expiry on read covers the time between. */
  sweepIntervalMs?: number;
  /**
   * Most records held at once (docs/storage.md, "The memory store"). At the cap the oldest device
   * codes go first (a flood of device authorizations is what fills it); with none left, a write
   * of a new record fails with {@link StoreUnavailableError}, which callers answer `503`.
   */
  maxRecords?: number;
}

interface StoredRecord {
  bytes: string;
  consumed: boolean;
  expiresAt: number;
  family: string | undefined;
  /** Its entry in the family's listing ({@link listingEntry}), when it is listed. */
  listed?: string | undefined;
}

interface FamilyIndex {
  members: Set<string>;
  expiresAt: number;
}

/** A refresh-token chain's state (docs/storage.md, "Refresh-token chains"), as on Redis. */
interface Chain {
  /** Issuances in the rate limit's window, and when it ends. */
  count: number;
  windowEnd: number;
  /** The last rotation: retired id, successor id, when it was applied, its retry value. */
  retired: string;
  successor: string;
  at: number;
  retry: string;
  /** The record the last rotation retired, packed: what a replay reports. */
  value: string;
  /** Every retired id's filter positions. */
  filter: Uint8Array;
  expiresAt: number;
}

interface Counter {
  count: number;
  expiresAt: number;
}

const defaultSweepIntervalMs = 30_000;

/** Same shape as the Redis key layout, without the prefix: one namespace per family. */
/** Device codes, their user codes and poll state: what a flood of device authorizations writes. */
function isDeviceRecord(recordKey: string): boolean {
  return /^(\{[^}]*\}:)?(dc:|uc:|misc:poll:)/.test(recordKey);
}

function toRecordKey(key: StoreKey): string {
  if (key.family === undefined) return `${key.kind}:${key.id}`;
  assertFamilyName(key.family);
  return `{${key.family}}:${key.kind}:${key.id}`;
}

/**
 * A listing's entry: the name's UTF-8 bytes as latin1 (so that string order is Redis's byte
 * order), U+0000, the record's key. Names hold no U+0000, so entries sort by name.
 */
function listingEntry(name: string, recordKey: string): string {
  return `${latin1Bytes(name)}\u0000${recordKey}`;
}

function latin1Bytes(text: string): string {
  return Buffer.from(text, 'utf8').toString('latin1');
}

/** The first index of sorted `entries` whose entry is not below `entry`. */
function lowerBound(entries: readonly string[], entry: string): number {
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((entries[mid] as string) < entry) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** A value given to the records must be packed already; anything else is a caller's bug. */
function packedValue(value: unknown): string {
  if (typeof value !== 'string') throw new TypeError('the memory records hold packed values (strings) only');
  return value;
}

/**
 * In-process records, values packed ({@link PackedRecords}); `MemoryStore` is the {@link Store}
 * over them.
 */
export class MemoryRecords implements PackedRecords {
  readonly #now: () => number;
  readonly #records = new Map<string, StoredRecord>();
  readonly #families = new Map<string, FamilyIndex>();
  /** Each family's listing ({@link Store.listFamily}): entries ({@link listingEntry}), sorted. */
  readonly #listings = new Map<string, string[]>();
  readonly #revoked = new Map<string, number>();
  readonly #counters = new Map<string, Counter>();
  readonly #chains = new Map<string, Chain>();
  readonly #sweepTimer: NodeJS.Timeout;
  readonly #maxRecords: number;
  #evicted = 0;
  #listingReads = 0;
  #closed = false;

  constructor(options: MemoryStoreOptions = {}) {
    this.#now = options.now ?? (() => performance.now());
    this.#maxRecords = options.maxRecords ?? Number.POSITIVE_INFINITY;
    this.#sweepTimer = setInterval(() => this.#sweep(), options.sweepIntervalMs ?? defaultSweepIntervalMs);
    // The sweep is housekeeping: it must never keep a process alive on its own.
    this.#sweepTimer.unref();
  }

  /** Records held right now, expired ones not yet swept included (for metrics and tests). */
  get size(): number {
    return this.#records.size;
  }

  /** Device-code records dropped at the cap so far (a metric). */
  get evicted(): number {
    return this.#evicted;
  }

  /** Records `listFamily` has looked at since start (tests: a page's cost). */
  get listingReads(): number {
    return this.#listingReads;
  }

  async set<T>(key: StoreKey, value: T, ttlMs: number): Promise<void> {
    this.#assertOpen();
    const ttl = toTtlMs(ttlMs);
    const recordKey = toRecordKey(key);
    if (key.family !== undefined && this.#isRevoked(key.family)) throw new FamilyRevokedError(key.family);
    const bytes = packedValue(value);
    const listed = key.name === undefined ? undefined : listingEntry(assertListedName(key), recordKey);
    this.#ensureRoom(1, recordKey);
    this.#write(recordKey, key.family, bytes, ttl, listed);
  }

  async get<T>(key: StoreKey): Promise<T | null> {
    this.#assertOpen();
    const record = this.#read(toRecordKey(key));
    if (record === undefined || record.consumed) return null;
    return record.bytes as T;
  }

  async delete(key: StoreKey): Promise<boolean> {
    this.#assertOpen();
    const recordKey = toRecordKey(key);
    const existed = this.#read(recordKey) !== undefined;
    this.#remove(recordKey);
    return existed;
  }

  async consume<T>(key: StoreKey): Promise<ConsumeResult<T>> {
    this.#assertOpen();
    return this.#consume<T>(toRecordKey(key));
  }

  async rotate<T, U, V = unknown>(
    oldKey: StoreKey,
    newKey: StoreKey,
    newValue: U,
    ttlMs: number,
    companion?: CompanionRecord<V> | readonly CompanionRecord<unknown>[],
  ): Promise<ConsumeResult<T>> {
    this.#assertOpen();
    const companions = companionList(companion);
    assertRotatable(oldKey, newKey, companions);
    const ttl = toTtlMs(ttlMs);
    const oldRecordKey = toRecordKey(oldKey);
    const newRecordKey = toRecordKey(newKey);
    // Check before touching state: a value that is not packed must leave nothing half done.
    const bytes = packedValue(newValue);
    const companionWrites = companions.map((c) => this.#prepare(c));
    // A revoked family: the refresh token is simply invalid (see Store.rotate).
    if (newKey.family !== undefined && this.#isRevoked(newKey.family)) return { status: 'missing' };
    // Room first: a full store must refuse before the old token is consumed, not after.
    this.#ensureRoom(1 + companionWrites.length);
    const result = this.#consume<T>(oldRecordKey);
    if (result.status === 'consumed') {
      this.#write(newRecordKey, newKey.family, bytes, ttl);
      for (const write of companionWrites) this.#write(write.key, write.family, write.bytes, write.ttl);
    }
    return result;
  }

  async rotateChain<T, U, R = unknown>(
    oldKey: StoreKey,
    newKey: StoreKey,
    newValue: U,
    ttlMs: number,
    companions: readonly CompanionRecord<unknown>[],
    chain: ChainPolicy<R>,
  ): Promise<ChainRotation<T>> {
    this.#assertOpen();
    assertRotatable(oldKey, newKey, companions);
    assertChain(oldKey, newKey, chain);
    const family = newKey.family as string;
    const ttl = toTtlMs(ttlMs);
    const chainTtl = toTtlMs(chain.ttlMs);
    const windowMs = toTtlMs(chain.windowMs);
    const oldRecordKey = toRecordKey(oldKey);
    const bytes = packedValue(newValue);
    const retry = chain.retry === undefined ? '' : packedValue(chain.retry);
    const companionWrites = companions.map((c) => this.#prepare(c));
    if (this.#isRevoked(family)) return { status: 'missing' };
    const current = this.#read(oldRecordKey);
    const state = this.#chain(family);
    if (current === undefined) {
      if (state === undefined) return { status: 'missing' };
      return state.retired === oldKey.id || filterHas(state.filter, oldKey.id)
        ? { status: 'replayed', value: state.value as T }
        : { status: 'missing' };
    }
    if (current.consumed) return { status: 'replayed', value: current.bytes as T };
    const now = this.#now();
    const window = state !== undefined && state.windowEnd > now ? state : { count: 0, windowEnd: now + windowMs };
    if (window.count >= chain.limit) return { status: 'limited', retryAfterMs: Math.ceil(window.windowEnd - now) };
    // Room first: a full store must refuse before the old token is retired, not after.
    this.#ensureRoom(1 + companionWrites.length);
    this.#write(toRecordKey(newKey), family, bytes, ttl);
    for (const write of companionWrites) this.#write(write.key, write.family, write.bytes, write.ttl);
    this.#retire(family, oldKey, newKey, window, retry, current.bytes, chainTtl, state, now);
    this.#remove(oldRecordKey);
    return { status: 'consumed', value: current.bytes as T };
  }

  async chainLookup<T, R = unknown>(oldKey: StoreKey, graceMs: number, chain: Omit<ChainPolicy, 'retry'>): Promise<ChainLookup<T, R>> {
    this.#assertOpen();
    const family = oldKey.family;
    if (family === undefined) throw new Error('a chain lookup needs a key in a family');
    assertFamilyName(family);
    const windowMs = toTtlMs(chain.windowMs);
    if (this.#isRevoked(family)) return { status: 'missing' };
    const current = this.#read(toRecordKey(oldKey));
    if (current !== undefined) return current.consumed ? { status: 'replayed', value: current.bytes as T } : { status: 'missing' };
    const state = this.#chain(family);
    if (state === undefined) return { status: 'missing' };
    if (state.retired === oldKey.id) {
      const now = this.#now();
      if (graceMs > 0 && now - state.at < graceMs) {
        const successor = this.#read(toRecordKey({ kind: oldKey.kind, id: state.successor, family }));
        if (successor !== undefined && !successor.consumed) {
          if (state.windowEnd <= now) {
            state.count = 0;
            state.windowEnd = now + windowMs;
          }
          if (state.count >= chain.limit) return { status: 'limited', retryAfterMs: Math.ceil(state.windowEnd - now) };
          state.count += 1;
          return { status: 'retry', successor: successor.bytes as T, successorId: state.successor, retry: state.retry as R };
        }
      }
      return { status: 'replayed', value: state.value as T };
    }
    return filterHas(state.filter, oldKey.id) ? { status: 'replayed', value: state.value as T } : { status: 'missing' };
  }

  async redeemChain<T, R = unknown>(
    oldKey: StoreKey,
    newKey: StoreKey,
    companions: readonly CompanionRecord<unknown>[],
    checks: ChainChecks,
    chain: ChainRedeemPolicy<R>,
  ): Promise<ChainRedemption<T, R>> {
    this.#assertOpen();
    assertRotatable(oldKey, newKey, companions);
    assertChain(oldKey, newKey, chain);
    const family = newKey.family as string;
    const windowMs = toTtlMs(chain.windowMs);
    const retry = chain.retry === undefined ? '' : packedValue(chain.retry);
    const companionWrites = companions.map((c) => this.#prepare(c));
    if (this.#isRevoked(family)) return { status: 'missing' };
    const oldRecordKey = toRecordKey(oldKey);
    const current = this.#read(oldRecordKey);
    // Gone: a retry within the grace window, a replay, or nothing of this chain.
    if (current === undefined) return this.chainLookup<T, R>(oldKey, chain.graceMs, { ...chain, ttlMs: 1000 });
    if (current.consumed) return { status: 'replayed', value: current.bytes as T };
    // The grant's checks, on the packed record as the Lua reads it on Redis (record_fields.ts).
    const checked = checkChainRecord(current.bytes, 0, checks);
    if (checked === undefined) return { status: 'unchecked', value: current.bytes as T };
    const state = this.#chain(family);
    const now = this.#now();
    const window = state !== undefined && state.windowEnd > now ? state : { count: 0, windowEnd: now + windowMs };
    if (window.count >= chain.limit) return { status: 'limited', retryAfterMs: Math.ceil(window.windowEnd - now) };
    this.#ensureRoom(1 + companionWrites.length);
    const ttl = toTtlMs(checked.expiresAt - checks.now);
    const chainTtl = toTtlMs(Math.max(1000, checked.absoluteExpiresAt - checks.now));
    this.#write(toRecordKey(newKey), family, checked.successor, ttl);
    for (const write of companionWrites) this.#write(write.key, write.family, write.bytes, write.ttl);
    this.#retire(family, oldKey, newKey, window, retry, current.bytes, chainTtl, state, now);
    this.#remove(oldRecordKey);
    return { status: 'consumed', value: current.bytes as T };
  }

  async redeemRecord<T>(
    key: StoreKey,
    checks: RedeemChecks,
    derived: DerivedRecord | undefined,
    companions: readonly CompanionRecord<unknown>[],
  ): Promise<Redemption<T>> {
    this.#assertOpen();
    assertRotatable(key, derived?.key ?? { ...key, id: `${key.id}~` }, companions);
    const family = key.family;
    if (family === undefined) throw new Error('redeemRecord needs a key in a family');
    const spec = derived === undefined ? undefined : derivedRecordSpec(derived, packedValue);
    const ttl = derived === undefined ? 0 : toTtlMs(derived.ttlMs);
    const companionWrites = companions.map((c) => this.#prepare(c));
    if (this.#isRevoked(family)) return { status: 'missing' };
    const recordKey = toRecordKey(key);
    const current = this.#read(recordKey);
    if (current === undefined) return { status: 'missing' };
    if (current.consumed) return { status: 'replayed', value: current.bytes as T };
    // The grant's checks, on the packed record as the Lua reads it on Redis (record_fields.ts).
    const checked = checkRedeemRecord(current.bytes, 0, checks, spec);
    if (checked === undefined) return { status: 'unchecked', value: current.bytes as T };
    // Room first: a full store must refuse before the record is consumed, not after.
    this.#ensureRoom((checked.derived === undefined ? 0 : 1) + companionWrites.length);
    if (checked.derived !== undefined && derived !== undefined) this.#write(toRecordKey(derived.key), family, checked.derived, ttl);
    for (const write of companionWrites) this.#write(write.key, write.family, write.bytes, write.ttl);
    // Consuming keeps the TTL, as SETRANGE does on Redis.
    current.consumed = true;
    return { status: 'consumed', value: current.bytes as T, derived: checked.derived !== undefined };
  }

  async writeWhileLive<V>(guards: readonly StoreKey[], record?: CompanionRecord<V>): Promise<boolean> {
    this.#assertOpen();
    assertOneSlot(guards, record);
    const write = record === undefined ? undefined : this.#prepare(record);
    if (write !== undefined) this.#ensureRoom(1);
    for (const guard of guards) {
      const found = this.#read(toRecordKey(guard));
      if (found === undefined || found.consumed) return false;
    }
    if (write !== undefined) this.#write(write.key, write.family, write.bytes, write.ttl);
    return true;
  }

  async revokeFamily(family: string, ttlMs: number): Promise<number> {
    this.#assertOpen();
    assertFamilyName(family);
    const ttl = toTtlMs(ttlMs);
    let removed = 0;
    const index = this.#families.get(family);
    if (index !== undefined) {
      for (const member of index.members) {
        if (this.#read(member) !== undefined) removed += 1;
        this.#records.delete(member);
      }
      this.#families.delete(family);
    }
    this.#listings.delete(family);
    this.#chains.delete(family);
    // Keep the longest revocation when a family is revoked twice.
    const until = this.#now() + ttl;
    if (!this.#isRevoked(family) || (this.#revoked.get(family) ?? 0) < until) this.#revoked.set(family, until);
    return removed;
  }

  async familyRecords<T>(family: string, kind: RecordKind): Promise<T[]> {
    this.#assertOpen();
    assertFamilyName(family);
    const prefix = `{${family}}:${kind}:`;
    const values: T[] = [];
    for (const member of this.#families.get(family)?.members ?? []) {
      if (!member.startsWith(prefix)) continue;
      const record = this.#read(member);
      if (record !== undefined && !record.consumed) values.push(record.bytes as T);
    }
    return values;
  }

  async listFamily<T>(family: string, after: string | undefined, limit: number): Promise<FamilyPage<T>> {
    this.#assertOpen();
    assertFamilyName(family);
    assertPageLimit(limit);
    const entries = this.#listings.get(family);
    if (entries === undefined) return { records: [], next: null };
    // Past every entry of `after` itself: its entries are `after`, U+0000, a key.
    let at = after === undefined ? 0 : lowerBound(entries, `${latin1Bytes(after)}\u0001`);
    const records: ListedRecord<T>[] = [];
    while (at < entries.length && records.length <= limit) {
      const entry = entries[at] as string;
      const split = entry.indexOf('\u0000');
      this.#listingReads += 1;
      // An expired record leaves the listing as it is read (#remove), so `at` then holds the next.
      const record = this.#read(entry.slice(split + 1));
      if (entries[at] !== entry) continue;
      at += 1;
      if (record === undefined || record.consumed) continue;
      records.push({ name: Buffer.from(entry.slice(0, split), 'latin1').toString('utf8'), value: record.bytes as T });
    }
    if (records.length <= limit) return { records, next: null };
    records.pop();
    return { records, next: (records.at(-1) as ListedRecord<T>).name };
  }

  async scanFamily<T>(family: string, kind: RecordKind, _cursor: string | undefined, _count: number): Promise<FamilyScan<T>> {
    // One process's records: one batch is as cheap as several.
    return { records: await this.familyRecords<T>(family, kind), cursor: null };
  }

  async listRecords(keys: readonly StoreKey[]): Promise<number> {
    this.#assertOpen();
    assertListable(keys);
    let listed = 0;
    for (const key of keys) {
      const recordKey = toRecordKey(key);
      const record = this.#read(recordKey);
      if (record === undefined || record.consumed) continue;
      this.#list(record, listingEntry(key.name as string, recordKey));
      listed += 1;
    }
    return listed;
  }

  async isFamilyRevoked(family: string): Promise<boolean> {
    this.#assertOpen();
    assertFamilyName(family);
    return this.#isRevoked(family);
  }

  async putIfAbsent<T>(key: StoreKey, value: T, ttlMs: number): Promise<T> {
    this.#assertOpen();
    const ttl = toTtlMs(ttlMs);
    const recordKey = toRecordKey(key);
    if (key.family !== undefined && this.#isRevoked(key.family)) throw new FamilyRevokedError(key.family);
    const existing = this.#read(recordKey);
    if (existing !== undefined && !existing.consumed) return existing.bytes as T;
    const bytes = packedValue(value);
    const listed = key.name === undefined ? undefined : listingEntry(assertListedName(key), recordKey);
    this.#ensureRoom(existing === undefined ? 1 : 0);
    this.#write(recordKey, key.family, bytes, ttl, listed);
    return bytes as T;
  }

  async replaceIfUnchanged<T>(key: StoreKey, expected: T, next: T | null, ttlMs: number): Promise<Replacement<T>> {
    this.#assertOpen();
    const ttl = toTtlMs(ttlMs);
    const recordKey = toRecordKey(key);
    const expectedBytes = packedValue(expected);
    const bytes = next === null ? null : packedValue(next);
    const listed = key.name === undefined ? undefined : listingEntry(assertListedName(key), recordKey);
    // A revoked family's records were deleted with it: nothing to compare with.
    if (key.family !== undefined && this.#isRevoked(key.family)) return { status: 'missing' };
    const current = this.#read(recordKey);
    if (current === undefined || current.consumed) return { status: 'missing' };
    if (current.bytes !== expectedBytes) return { status: 'changed', current: current.bytes as T };
    if (bytes === null) this.#remove(recordKey);
    else this.#write(recordKey, key.family, bytes, ttl, listed);
    return { status: 'replaced' };
  }

  async increment(name: string, windowMs: number, by = 1): Promise<CounterResult> {
    this.#assertOpen();
    const window = toTtlMs(windowMs);
    const now = this.#now();
    let counter = this.#counters.get(name);
    if (counter === undefined || counter.expiresAt <= now) {
      counter = { count: 0, expiresAt: now + window };
      this.#counters.set(name, counter);
    }
    counter.count += by;
    // min: with a fractional clock, (now + window) - now can come out a hair above the window.
    return { count: counter.count, resetInMs: Math.min(window, Math.ceil(counter.expiresAt - now)) };
  }

  async resetCounter(name: string): Promise<void> {
    this.#assertOpen();
    this.#counters.delete(name);
  }

  async ping(): Promise<void> {
    this.#assertOpen();
  }

  async checkReady(): Promise<void> {
    this.#assertOpen();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweepTimer);
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreUnavailableError('memory store is closed');
  }

  /** Lazy expiry: an expired record is dropped the moment it is looked at. */
  #read(recordKey: string): StoredRecord | undefined {
    const record = this.#records.get(recordKey);
    if (record === undefined) return undefined;
    if (record.expiresAt <= this.#now()) {
      this.#remove(recordKey);
      return undefined;
    }
    return record;
  }

  #consume<T>(recordKey: string): ConsumeResult<T> {
    const record = this.#read(recordKey);
    if (record === undefined) return { status: 'missing' };
    if (record.consumed) return { status: 'replayed', value: record.bytes as T };
    // Consuming keeps the TTL, as SETRANGE does on Redis.
    record.consumed = true;
    return { status: 'consumed', value: record.bytes as T };
  }

  /** A companion record checked, before any state is touched. */
  #prepare(record: CompanionRecord<unknown>): { key: string; family: string | undefined; bytes: string; ttl: number } {
    return { key: toRecordKey(record.key), family: record.key.family, bytes: packedValue(record.value), ttl: toTtlMs(record.ttlMs) };
  }

  /**
   * Makes room for `n` new records under the cap: expired records first, then the oldest device
   * codes and user codes (Map order is insertion order), else refuses the write.
   */
  #ensureRoom(n: number, overwritten?: string): void {
    if (this.#records.size + n <= this.#maxRecords) return;
    // Replacing a record that is there takes no room (looked up only near the cap).
    if (overwritten !== undefined && this.#records.has(overwritten)) return;
    this.#sweep();
    if (this.#records.size + n <= this.#maxRecords) return;
    for (const [recordKey] of this.#records) {
      if (this.#records.size + n <= this.#maxRecords) return;
      if (!isDeviceRecord(recordKey)) continue;
      this.#remove(recordKey);
      this.#evicted += 1;
    }
    if (this.#records.size + n > this.#maxRecords) {
      throw new StoreUnavailableError(`memory store full: ${this.#records.size} records (store.maxRecords)`);
    }
  }

  #write(recordKey: string, family: string | undefined, bytes: string, ttl: number, listed?: string): void {
    const expiresAt = this.#now() + ttl;
    // A write without a name keeps the record's listing, as on Redis.
    const before = this.#records.get(recordKey)?.listed;
    const record: StoredRecord = { bytes, consumed: false, expiresAt, family, listed: before };
    this.#records.set(recordKey, record);
    if (listed !== undefined) this.#list(record, listed);
    if (family === undefined) return;
    const index = this.#families.get(family);
    if (index === undefined || index.expiresAt <= this.#now()) {
      this.#families.set(family, { members: new Set([recordKey]), expiresAt });
      return;
    }
    index.members.add(recordKey);
    // The index lives as long as its longest-lived member, like the Redis members SET.
    if (index.expiresAt < expiresAt) index.expiresAt = expiresAt;
  }

  #remove(recordKey: string): void {
    const record = this.#records.get(recordKey);
    if (record === undefined) return;
    this.#records.delete(recordKey);
    if (record.family !== undefined) this.#families.get(record.family)?.members.delete(recordKey);
    if (record.listed !== undefined) this.#unlist(record.family as string, record.listed);
  }

  /** Puts a family record in its family's listing as `entry`, in place of an entry it had. */
  #list(record: StoredRecord, entry: string): void {
    const family = record.family as string;
    if (record.listed === entry) return;
    if (record.listed !== undefined) this.#unlist(family, record.listed);
    record.listed = entry;
    let entries = this.#listings.get(family);
    if (entries === undefined) {
      entries = [];
      this.#listings.set(family, entries);
    }
    const at = lowerBound(entries, entry);
    if (entries[at] !== entry) entries.splice(at, 0, entry);
  }

  #unlist(family: string, entry: string): void {
    const entries = this.#listings.get(family);
    if (entries === undefined) return;
    const at = lowerBound(entries, entry);
    if (entries[at] === entry) entries.splice(at, 1);
    if (entries.length === 0) this.#listings.delete(family);
  }

  /** Notes a rotation in the family's chain state: the retired id in the filter, the rate limit counted. */
  #retire(
    family: string,
    oldKey: StoreKey,
    newKey: StoreKey,
    window: { count: number; windowEnd: number },
    retry: string,
    retired: string,
    chainTtl: number,
    state: Chain | undefined,
    now: number,
  ): void {
    const filter = state?.filter ?? new Uint8Array(retiredFilterBits / 8);
    for (const position of retiredFilterPositions(oldKey.id))
      filter[position >> 3] = (filter[position >> 3] as number) | (1 << (position & 7));
    this.#chains.set(family, {
      count: window.count + 1,
      windowEnd: window.windowEnd,
      retired: oldKey.id,
      successor: newKey.id,
      at: now,
      retry,
      value: retired,
      filter,
      expiresAt: Math.max(state?.expiresAt ?? 0, now + chainTtl),
    });
  }

  #chain(family: string): Chain | undefined {
    const state = this.#chains.get(family);
    if (state === undefined || state.expiresAt > this.#now()) return state;
    this.#chains.delete(family);
    return undefined;
  }

  #isRevoked(family: string): boolean {
    const until = this.#revoked.get(family);
    if (until === undefined) return false;
    if (until <= this.#now()) {
      this.#revoked.delete(family);
      return false;
    }
    return true;
  }

  #sweep(): void {
    const now = this.#now();
    for (const [recordKey, record] of this.#records) if (record.expiresAt <= now) this.#remove(recordKey);
    for (const [family, index] of this.#families) if (index.expiresAt <= now) this.#families.delete(family);
    for (const [family, until] of this.#revoked) if (until <= now) this.#revoked.delete(family);
    for (const [name, counter] of this.#counters) if (counter.expiresAt <= now) this.#counters.delete(name);
    for (const [family, state] of this.#chains) if (state.expiresAt <= now) this.#chains.delete(family);
  }
}

function filterHas(filter: Uint8Array, id: string): boolean {
  return retiredFilterPositions(id).every((position) => (((filter[position >> 3] as number) >> (position & 7)) & 1) === 1);
}
