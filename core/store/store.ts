/**
 * The one contract for state that outlives a request (docs/storage.md). Two implementations pass the same
 * conformance suite: {@link MemoryStore} (one process) and {@link RedisStore} (any number of
 * gateway processes).
 *
 * Keys are never raw handles: callers pass `id` = base64url(SHA-256(handle)) (see `hashHandle`).
 * A `family` groups records that are revoked together (a refresh-token family, the tokens issued
 * from one authorization code); on Redis every key of a family shares the hash tag `{family}` so
 * that family operations stay atomic on a cluster. A sub-family `<family>~<name>` (see
 * {@link subFamily}) has its own records, members and revocation, but shares its family's hash
 * tag, so one atomic step can write into both (a rotation's {@link CompanionRecord}).
 *
 * Rules both implementations keep (the conformance suite in `test/core/store/` checks each):
 * - Every record carries a TTL in milliseconds (a positive number; fractions round up). There is
 *   no record without an expiry.
 * - Values are packed with msgpackr (`record_codec.ts`): what comes back is a copy, and only what
 *   msgpack can carry (plain objects, arrays, strings, numbers, booleans, null, Dates, bytes)
 *   survives the round trip.
 * - A consumed record stays stored (so that a replay is detected) but is invisible to
 *   {@link Store.get} and counts as absent for {@link Store.putIfAbsent}.
 * - A revoked family refuses writes: `set` and `putIfAbsent` throw {@link FamilyRevokedError},
 *   `rotate` resolves `missing` and writes nothing.
 * - Every backend failure (refused connection, timeout, cluster down, closed store) rejects with
 *   {@link StoreUnavailableError} in bounded time; nothing hangs.
 */
export type RecordKind =
  | 'code' // authorization codes
  | 'rt' // refresh tokens
  | 'dc' // device codes
  | 'uc' // user codes
  | 'jti' // revoked access-token ids (deny list)
  | 'at' // access tokens issued within a family, so that revoking the family can deny them
  | 'retry' // a rotation's successor, sealed for a client that never got the answer (refresh grace window)
  | 'key' // signing keys and development keys
  | 'consent' // a user's remembered consent to a client (gateway/pages/user_grants.ts)
  | 'grant' // a user's grant family with a client, so that revoking the client's access finds it
  | 'par' // pushed authorization requests (RFC 9126), consumed once by the authorization endpoint
  | 'client' // clients kept in the store (the client registry, docs/storage.md "Clients in the store") and its version
  | 'misc';

export interface StoreKey {
  kind: RecordKind;
  /** Already hashed identifier. */
  id: string;
  /** Family the record belongs to; omitted for standalone records. */
  family?: string;
  /**
   * A family record's name in its family's listing ({@link Store.listFamily}), kept in the same
   * atomic step as the record by `set`, `putIfAbsent` and `delete` (other writes ignore it). One
   * record keeps one name; a name never contains U+0000. The store-kept clients are listed this
   * way, by `clientId` (docs/storage.md, "Clients in the store").
   */
  name?: string;
}

/** One record of a family's listing and the name it is listed under. */
export interface ListedRecord<T> {
  readonly name: string;
  readonly value: T;
}

/** One page of {@link Store.listFamily}. */
export interface FamilyPage<T> {
  /** Live records by name (UTF-8 byte order), at most the page's `limit`. */
  readonly records: readonly ListedRecord<T>[];
  /** The `after` of the next page: `null` once the listing is done. */
  readonly next: string | null;
}

/** One batch of {@link Store.scanFamily}. */
export interface FamilyScan<T> {
  readonly records: readonly T[];
  /** Where the next batch starts; `null` once the scan is done. */
  readonly cursor: string | null;
}

/**
 * A record written in the same atomic step as a rotation, and only when the rotation wins
 * (`consumed`). Its key must be in the successor's family or in one of its sub-families.
 * Unlike `set`, it does not consult its own family's revocation: it exists because the
 * successor's family accepted the rotation.
 */
export interface CompanionRecord<V> {
  readonly key: StoreKey;
  readonly value: V;
  readonly ttlMs: number;
}

/** What an atomic consume found. */
export type ConsumeResult<T> =
  | { status: 'consumed'; value: T }
  /** Already consumed before: a replay. The original value is returned so the caller can revoke. */
  | { status: 'replayed'; value: T }
  | { status: 'missing' };

/**
 * How a refresh-token family keeps its chain when `rotate` is given one (docs/storage.md,
 * "Refresh-token chains"): instead of keeping every retired token as a consumed record for reuse
 * detection, the store deletes it and keeps, per family, a constant amount of state: one chain
 * record (the last rotation: predecessor, successor, when it was applied on the store's own
 * clock, the retry value, the retired record; the issuance counter of the rate limit) and a
 * fixed-size filter of every retired token's id. So a family's store footprint does not grow with
 * its rotations, and rotations beyond `limit` per `windowMs` are refused.
 */
export interface ChainPolicy<R = unknown> {
  /** What a retry of the retired token within the grace window reads back (the retry nonce). */
  readonly retry?: R;
  /** Most issuances (rotations and grace-window retries) per window; then `limited`. */
  readonly limit: number;
  /** The rate limit's fixed window, opened by the first issuance on the store's clock. */
  readonly windowMs: number;
  /** How long the chain's state is kept: as long as any token of the family could live. */
  readonly ttlMs: number;
}

/** A chain's rotation refused by its rate limit: nothing was written. */
export interface Limited {
  status: 'limited';
  /** Milliseconds until the window ends, on the store's clock. */
  retryAfterMs: number;
}

/** What `rotate` with a {@link ChainPolicy} found. */
export type ChainRotation<T> = ConsumeResult<T> | Limited;

/** What {@link Store.chainLookup} found for a token that is no longer live. */
export type ChainLookup<T, R> =
  /**
   * The chain's last rotation retired it less than `graceMs` ago (store clock) and its successor
   * is live: `successor` is that record, `successorId` its id, `retry` the rotation's retry value.
   * Counts as an issuance of the rate limit.
   */
  | { status: 'retry'; successorId: string; successor: T; retry: R }
  /** A token of this chain retired before (or consumed, in a record of an earlier version). */
  | { status: 'replayed'; value: T }
  | Limited
  | { status: 'missing' };

/**
 * What a refresh redeemed in one store call ({@link Store.redeemChain}) checks on the token's
 * record before it rotates it: the grant's own checks, decided by the store on the record it holds
 * (docs/storage.md, "One round trip per redemption"). Fields of the stored record, by name: a
 * record that does not have them as expected fails the check, which only means the caller decides.
 */
export interface ChainChecks {
  /** The record's `clientId` must be this. */
  readonly clientId: string;
  /** The caller's clock (epoch ms): the record's `expiresAt` and `absoluteExpiresAt` must be later. */
  readonly now: number;
  /** A record with a `jkt` (`x5t`) needs this one; `undefined`: a record with one fails. */
  readonly jkt?: string | undefined;
  readonly x5t?: string | undefined;
  /** The record's `scopes` must be some, each one of these (what the client may still be granted). */
  readonly scopes: readonly string[];
  /**
   * The successor is the record with `expiresAt` = the earlier of its `absoluteExpiresAt` and
   * this (a sliding expiry); `undefined`: the absolute one. It lives until then from `now`; the
   * chain's state as long as `absoluteExpiresAt` (at least a second).
   */
  readonly slidingUntil?: number | undefined;
}

/** The rate limit and grace window of {@link Store.redeemChain}: a {@link ChainPolicy} whose state lives as the record says. */
export interface ChainRedeemPolicy<R = unknown> extends Omit<ChainPolicy<R>, 'ttlMs'> {
  /** For a token already rotated: the grace window of {@link Store.chainLookup}. */
  readonly graceMs: number;
}

export type ChainRedemption<T, R> =
  /** Checked and rotated: `value` is the retired record; the successor and companions are written. */
  | { status: 'consumed'; value: T }
  /** Live, but a check did not pass (or could not be read): nothing written; the caller decides with `value`. */
  | { status: 'unchecked'; value: T }
  /** The token was gone: as {@link Store.chainLookup}; or the rotation was past the rate limit. */
  | ChainLookup<T, R>;

/**
 * What a single-use record redeemed in one store call ({@link Store.redeemRecord}) must hold: the
 * grant's checks, decided by the store on the record it holds (docs/storage.md, "One round trip
 * per redemption"). Fields of the stored record, by name; a record that fails them is handed back
 * unconsumed, and the caller decides.
 */
export interface RedeemChecks {
  /** Fields that must hold exactly these strings; `null`: the record must not have the field. */
  readonly equal: Readonly<Record<string, string | null>>;
  /** Fields that, when the record has them, must hold these strings; `undefined`: must not have them. */
  readonly bound?: Readonly<Record<string, string | undefined>>;
  /** Number fields that must be greater than these (the caller's clock, epoch ms). */
  readonly later?: Readonly<Record<string, number>>;
  /** The record's `scopes` must be some, each one of these (what the client may still be granted). */
  readonly scopes: readonly string[];
}

/**
 * A record {@link Store.redeemRecord} writes in the redemption's step, made of the redeemed
 * record's fields (a refresh token from its code): a map of `set`, then each of `copy` the record
 * has, as stored, then for each `nest` entry a map of the named fields it has. Written only when
 * the record's `scopes` include `whenScope`; in the redeemed key's family.
 */
export interface DerivedRecord {
  readonly key: StoreKey;
  readonly ttlMs: number;
  readonly whenScope: string;
  readonly set: Readonly<Record<string, unknown>>;
  readonly copy: readonly string[];
  readonly nest?: Readonly<Record<string, readonly string[]>>;
}

export type Redemption<T> =
  /** Checked and consumed: `value` is the record; `derived` whether the derived record was written. */
  | { status: 'consumed'; value: T; derived: boolean }
  /** Live, but a check did not pass (or could not be read): nothing written; the caller decides with `value`. */
  | { status: 'unchecked'; value: T }
  /** Consumed before. */
  | { status: 'replayed'; value: T }
  /** Not there, or its family revoked. */
  | { status: 'missing' };

/** What {@link Store.replaceIfUnchanged} found. */
export type Replacement<T> =
  /** The record held `expected`: `next` is written (or the record deleted). */
  | { status: 'replaced' }
  /** A live record holds another value: nothing written; `current` is that value, to re-apply a change to. */
  | { status: 'changed'; current: T }
  /** No live record (never written, deleted, expired, consumed, or its family revoked): nothing written. */
  | { status: 'missing' };

export interface CounterResult {
  /** Value after the increment. */
  count: number;
  /** Milliseconds until the window ends. */
  resetInMs: number;
}

export interface Store {
  /**
   * Writes (or overwrites) a record for `ttlMs`. A record with a `family` joins that family.
   *
   * @throws {@link FamilyRevokedError} when the key's family is revoked.
   * @example
   * ```ts
   * await store.set({ kind: 'code', id: hashHandle(code) }, { clientId, scope }, 300_000);
   * ```
   */
  set<T>(key: StoreKey, value: T, ttlMs: number): Promise<void>;
  /** The live record, or `null` when it is missing, expired or already consumed. */
  get<T>(key: StoreKey): Promise<T | null>;
  /** Removes a record (consumed or not). Resolves whether something was removed. */
  delete(key: StoreKey): Promise<boolean>;
  /**
   * Atomically marks a record consumed and returns it. Of any number of concurrent callers exactly
   * one sees `consumed`; later callers see `replayed` (until the record's TTL ends) so that a
   * replay can revoke what the first redemption issued. Consuming keeps the record's TTL.
   *
   * @example
   * ```ts
   * const found = await store.consume<CodeRecord>({ kind: 'code', id: hashHandle(code) });
   * if (found.status === 'replayed') await store.revokeFamily(found.value.family, ttlMs);
   * if (found.status !== 'consumed') return error(TokenRequestErrors.InvalidGrant);
   * ```
   */
  consume<T>(key: StoreKey): Promise<ConsumeResult<T>>;
  /**
   * Consume `oldKey` and write `newKey` in one atomic step: either both happen or neither does.
   * The successor is only written when the consume wins (`consumed`); on `replayed` and `missing`
   * nothing is written.
   *
   * When the family of `newKey` is revoked the result is `missing` and nothing is written (not
   * even the consume): a revoked refresh token is simply invalid (RFC 9700 §4.14.2), and a
   * `replayed` there would make the caller revoke the family a second time.
   *
   * Both keys must be standalone or belong to the same family (one Redis Cluster slot); otherwise
   * this throws a plain `Error`. On Redis Cluster two standalone keys live in different slots, so
   * there a rotation needs a family.
   *
   * A `companion` (or a list of them) is written with the successor, in the same step (see
   * {@link CompanionRecord}): a refresh records the access token it issued this way, so that a
   * revocation of the family either refuses the rotation or finds the token, never neither; and
   * its retry record, so that a client that lost the answer can still get the successor.
   */
  rotate<T, U, V = unknown>(
    oldKey: StoreKey,
    newKey: StoreKey,
    newValue: U,
    ttlMs: number,
    companion?: CompanionRecord<V> | readonly CompanionRecord<unknown>[],
  ): Promise<ConsumeResult<T>>;
  /**
   * {@link Store.rotate} of a refresh-token chain (see {@link ChainPolicy}; both keys in one
   * family): when it wins, the old record is deleted rather than kept consumed, its id joins the
   * family's filter of retired ids, and the chain record notes this rotation with the store's
   * clock. An old token that is gone but was retired in this chain answers `replayed` with the
   * retired record, as a consumed one would; a rotation past the rate limit answers `limited`
   * and writes nothing.
   */
  rotateChain<T, U, R = unknown>(
    oldKey: StoreKey,
    newKey: StoreKey,
    newValue: U,
    ttlMs: number,
    companions: readonly CompanionRecord<unknown>[],
    chain: ChainPolicy<R>,
  ): Promise<ChainRotation<T>>;
  /**
   * For a token of a chain that `get` no longer finds, in one atomic step: a retry within the
   * grace window (`graceMs` after its rotation was applied, on the store's clock, while its
   * successor is live), a replay (retired in this chain), `limited`, or `missing` (never of this
   * chain, or the family revoked). `chain` gives the rate limit a retry counts against.
   */
  chainLookup<T, R = unknown>(oldKey: StoreKey, graceMs: number, chain: Omit<ChainPolicy, 'retry'>): Promise<ChainLookup<T, R>>;
  /**
   * A refresh of a chain token in one atomic step (one round trip): when `oldKey` is live and
   * passes `checks`, {@link Store.rotateChain} to `newKey`, the successor being the old record with
   * its expiry moved (see {@link ChainChecks}); when it is live and fails them, `unchecked` and
   * nothing written; when it is gone, {@link Store.chainLookup} with `chain.graceMs`. Past the
   * caller's deadline on Redis, nothing is done (docs/storage.md, "Late rotations").
   */
  redeemChain<T, R = unknown>(
    oldKey: StoreKey,
    newKey: StoreKey,
    companions: readonly CompanionRecord<unknown>[],
    checks: ChainChecks,
    chain: ChainRedeemPolicy<R>,
  ): Promise<ChainRedemption<T, R>>;
  /**
   * A code or device code redeemed in one step (docs/storage.md, "One round trip per
   * redemption"): when `key` is live and its record passes `checks`, consumes it (as `consume`),
   * writes `derived` when the record's scopes include its `whenScope`, and the companions;
   * `consumed` with the record and whether `derived` was written. Live but failing a check:
   * `unchecked` with the record, nothing written. Consumed before: `replayed`. Missing, or its
   * family revoked: `missing`. `key`, `derived` and the companions in one family (or its
   * sub-families).
   */
  redeemRecord<T>(
    key: StoreKey,
    checks: RedeemChecks,
    derived: DerivedRecord | undefined,
    companions: readonly CompanionRecord<unknown>[],
  ): Promise<Redemption<T>>;
  /**
   * In one atomic step: when every `guard` holds a live record (stored, unexpired, not
   * consumed), writes `record` (if given) and resolves `true`; otherwise writes nothing and
   * resolves `false`. `record` is written as a rotation's companion is: it joins its family and
   * does not consult that family's revocation (a guard in a revoked family is gone, so nothing is
   * written there). Every key must be in one family or its sub-families (one Redis Cluster
   * slot); otherwise this throws a plain `Error`.
   *
   * A refresh retried within its grace window uses it: the retry record and the successor must
   * both still be live while the access token it issues is recorded in the family.
   *
   * @example
   * ```ts
   * const continued = await store.writeWhileLive([retryKey, successorKey], issuedAccessToken);
   * ```
   */
  writeWhileLive<V>(guards: readonly StoreKey[], record?: CompanionRecord<V>): Promise<boolean>;
  /**
   * Deletes every record of the family and remembers the revocation for `ttlMs`, so that a record
   * written into it later is refused. Returns how many records were removed (consumed records
   * included, expired ones not).
   */
  revokeFamily(family: string, ttlMs: number): Promise<number>;
  isFamilyRevoked(family: string): Promise<boolean>;
  /**
   * The live (unconsumed, unexpired) records of one kind in a family, in no particular order.
   * Not atomic with other calls: callers that need a complete list revoke the family first, after
   * which nothing can be added to it.
   */
  familyRecords<T>(family: string, kind: RecordKind): Promise<T[]>;
  /**
   * The family's listed records (written with a {@link StoreKey.name}) by name, `limit` of them
   * from the first name after `after` (from the first name when `undefined`): a page costs about
   * `limit` record reads however many records the family lists (a sorted index on Redis, a
   * sorted array in memory). Live records only; a name whose record expired or is consumed is
   * skipped (and forgotten when gone). `next` is not `null` while more may follow; a page may
   * then hold fewer than `limit` records (Redis reads a bounded number of forgotten names per
   * call).
   *
   * Paging by name gives every record listed throughout the walk exactly once, in order; a record
   * written or deleted during the walk shows in a later page, or not, by where its name falls
   * against the pages already read.
   */
  listFamily<T>(family: string, after: string | undefined, limit: number): Promise<FamilyPage<T>>;
  /**
   * The live records of one kind in a family, a batch of about `count` at a time, in no order,
   * from `cursor` (`undefined` to begin): for walking a family too large for `familyRecords`. A
   * record there throughout the scan is returned at least once (Redis `SSCAN`; the memory store
   * answers in one batch).
   */
  scanFamily<T>(family: string, kind: RecordKind, cursor: string | undefined, count: number): Promise<FamilyScan<T>>;
  /**
   * Lists records written before they had a name (`keys`, each with its `name`, all of one
   * family), each only while it is live, in one atomic step; resolves how many were listed. The
   * migration of a family to a listing (gateway/client_registry/client_listing_backfill.ts).
   */
  listRecords(keys: readonly StoreKey[]): Promise<number>;
  /**
   * Writes the record only when no live record is stored under the key, atomically, and resolves
   * the value stored afterwards: `value` for the caller that wrote it, the earlier value for every
   * other caller. Used to share one development signing key between gateway instances.
   *
   * @throws {@link FamilyRevokedError} when the key's family is revoked.
   * @example
   * ```ts
   * const jwk = await store.putIfAbsent({ kind: 'key', id: 'dev' }, generatedJwk, 30 * 86_400_000);
   * ```
   */
  putIfAbsent<T>(key: StoreKey, value: T, ttlMs: number): Promise<T>;
  /**
   * Compare-and-set of one record, in one atomic step: when the live record under `key` holds
   * `expected` (compared as packed bytes, `record_codec.ts`: a value read with {@link Store.get}
   * compares equal to what is stored), writes `next` for `ttlMs` (`null`: deletes the record) and
   * resolves `replaced`; otherwise writes nothing and resolves `changed` with the value stored now,
   * or `missing`. A read-modify-write that must not lose a concurrent change loops on it: read,
   * change, replace, and on `changed` change the current value again (the client registry,
   * docs/storage.md "Compare-and-set"). The key's listing ({@link StoreKey.name}) is kept as `set`
   * and `delete` keep it. A revoked family holds no record: `missing`.
   *
   * @example
   * ```ts
   * const found = await store.get<Doc>(key);
   * const outcome = await store.replaceIfUnchanged(key, found, { ...found, n: found.n + 1 }, ttlMs);
   * ```
   */
  replaceIfUnchanged<T>(key: StoreKey, expected: T, next: T | null, ttlMs: number): Promise<Replacement<T>>;
  /**
   * Fixed-window counter (rate limiting). The window starts with the first increment and ends
   * `windowMs` later, whatever happens in between; the next increment then starts a new window.
   * `by` (default 1) may be negative: a throttle that counts an attempt before it is evaluated
   * takes it back when the attempt turns out good (docs/security.md, "Throttles").
   */
  increment(name: string, windowMs: number, by?: number): Promise<CounterResult>;
  /** Ends the counter's window now. */
  resetCounter(name: string): Promise<void>;
  /** Throws {@link StoreUnavailableError} when the backend cannot be reached. */
  ping(): Promise<void>;
  /**
   * Throws {@link StoreUnavailableError} unless the store can serve the service's commands now:
   * a reachable Redis that refuses writes (paused for a failover, a Cluster whose state is `fail`,
   * out of memory) is not ready, so `/readyz` writes a short-lived key rather than pinging
   * (docs/operations.md, "Health and readiness").
   */
  checkReady(): Promise<void>;
  /** Releases connections and timers. Later calls reject with {@link StoreUnavailableError}. */
  close(): Promise<void>;
}

/**
 * The backend could not be reached in bounded time. The gateway answers `503
 * temporarily_unavailable` with `Retry-After`.
 */
export class StoreUnavailableError extends Error {
  readonly code = 'store_unavailable' as const;
  constructor(detail: string, options?: { cause?: unknown }) {
    super(`store unavailable: ${detail}`, options);
    this.name = 'StoreUnavailableError';
  }
}

/** A write into a family that was revoked. */
export class FamilyRevokedError extends Error {
  readonly code = 'family_revoked' as const;
  constructor(readonly family: string) {
    super(`family ${family} is revoked`);
    this.name = 'FamilyRevokedError';
  }
}

export function isStoreUnavailable(err: unknown): boolean {
  return (
    err instanceof StoreUnavailableError ||
    (typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'store_unavailable')
  );
}

/**
 * A TTL as both implementations take it: a positive finite number of milliseconds, rounded up to
 * a whole millisecond (Redis `PX` takes integers). Anything else is a programming error.
 * @internal
 */
export function toTtlMs(ttlMs: number): number {
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new RangeError(`store TTL must be a positive number of milliseconds, got ${String(ttlMs)}`);
  }
  return Math.ceil(ttlMs);
}

/**
 * Family names become a Redis Cluster hash tag (`{family}`), so braces would split the tag.
 * @internal
 */
export function assertFamilyName(family: string): void {
  if (typeof family !== 'string' || family.length === 0 || family.includes('{') || family.includes('}')) {
    throw new Error(`invalid store family ${JSON.stringify(family)}: must be non-empty without braces`);
  }
}

/** Separates a family from the name of one of its sub-families; family ids never contain it. */
const subFamilySeparator = '~';

/** The sub-family `name` of `family`: its own records and revocation, in the family's slot. */
export function subFamily(family: string, name: string): string {
  return `${family}${subFamilySeparator}${name}`;
}

/**
 * The family whose hash tag a family's keys carry: the family itself, or for a sub-family the
 * family it belongs to.
 * @internal
 */
export function slotFamily(family: string): string {
  const at = family.indexOf(subFamilySeparator);
  return at === -1 ? family : family.slice(0, at);
}

/**
 * The precondition of {@link Store.rotate}: one atomic step needs every key in one place (one
 * Redis Cluster slot), so old and new are both standalone or both in the same family, and a
 * companion is in that family or one of its sub-families.
 * @internal
 */
export function assertRotatable(oldKey: StoreKey, newKey: StoreKey, companions: readonly CompanionRecord<unknown>[]): void {
  if ((oldKey.family ?? null) !== (newKey.family ?? null)) {
    throw new Error('rotate needs both keys standalone or in the same family');
  }
  if (oldKey.kind === newKey.kind && oldKey.id === newKey.id) {
    throw new Error('rotate needs two different keys');
  }
  for (const [i, companion] of companions.entries()) {
    const family = companion.key.family;
    if (newKey.family === undefined || family === undefined || slotFamily(family) !== slotFamily(newKey.family)) {
      throw new Error("rotate's companion record must be in the successor's family or one of its sub-families");
    }
    if (
      sameKey(companion.key, oldKey) ||
      sameKey(companion.key, newKey) ||
      companions.slice(0, i).some((c) => sameKey(c.key, companion.key))
    ) {
      throw new Error("rotate's companion record needs a key of its own");
    }
  }
}

/**
 * `rotate`'s companion argument as a list.
 * @internal
 */
export function companionList(
  companion: CompanionRecord<unknown> | readonly CompanionRecord<unknown>[] | undefined,
): readonly CompanionRecord<unknown>[] {
  if (companion === undefined) return [];
  return Array.isArray(companion) ? (companion as readonly CompanionRecord<unknown>[]) : [companion as CompanionRecord<unknown>];
}

/**
 * The precondition of {@link Store.writeWhileLive}: at least one guard, and every key in one
 * family or its sub-families, so the check and the write are one step on Redis Cluster too.
 * @internal
 */
export function assertOneSlot(guards: readonly StoreKey[], record: CompanionRecord<unknown> | undefined): void {
  const first = guards[0]?.family;
  if (first === undefined) throw new Error('writeWhileLive needs at least one guard, in a family');
  const slot = slotFamily(first);
  const keys = record === undefined ? guards : [...guards, record.key];
  for (const key of keys) {
    if (key.family === undefined || slotFamily(key.family) !== slot) {
      throw new Error('writeWhileLive needs every key in one family or its sub-families');
    }
  }
}

/** Bits of the filter of retired ids a chain keeps (1 KiB), and bits set per id. */
export const retiredFilterBits = 8192;
const retiredFilterHashes = 4;

/**
 * The filter positions of a retired token's id (base64url of SHA-256, so its bytes are uniform):
 * four 13-bit numbers from its first eight bytes. A Bloom filter: an id that was retired always
 * matches; one never issued matches with probability (1 − e^(−4n/8192))^4 after n retirements
 * (docs/storage.md, "Refresh-token chains").
 * @internal
 */
export function retiredFilterPositions(id: string): number[] {
  const bytes = Buffer.from(id, 'base64url');
  if (bytes.length < 2 * retiredFilterHashes) throw new Error('a chain token id is a hash of at least 8 bytes');
  const positions: number[] = [];
  for (let i = 0; i < retiredFilterHashes; i += 1) positions.push(bytes.readUInt16BE(2 * i) % retiredFilterBits);
  return positions;
}

/**
 * The precondition of {@link Store.rotateChain}: both keys in one family.
 * @internal
 */
export function assertChain(oldKey: StoreKey, newKey: StoreKey, chain: Pick<ChainPolicy<unknown>, 'limit' | 'windowMs'>): void {
  if (oldKey.family === undefined || oldKey.family !== newKey.family) throw new Error('a chain rotation needs both keys in one family');
  if (!(chain.limit >= 1) || !(chain.windowMs > 0)) throw new RangeError('a chain needs a limit of at least 1 per positive window');
}

/**
 * The precondition of a listing name (see {@link StoreKey.name}): in a family, without U+0000
 * (which ends the name in the listing's entries).
 * @internal
 */
export function assertListedName(key: StoreKey): string {
  const { name } = key;
  if (name === undefined) throw new Error('a listed record needs a name');
  if (key.family === undefined) throw new Error('only a family record can be listed');
  if (typeof name !== 'string' || name.includes('\u0000')) throw new Error(`invalid listing name ${JSON.stringify(name)}: no U+0000`);
  return name;
}

/**
 * The precondition of {@link Store.listRecords}: every key named and in one family.
 * @internal
 */
export function assertListable(keys: readonly StoreKey[]): void {
  const family = keys[0]?.family;
  for (const key of keys) {
    assertListedName(key);
    if (key.family !== family) throw new Error('listRecords needs every key in one family');
  }
}

/**
 * `limit` of {@link Store.listFamily}: a whole number from 1.
 * @internal
 */
export function assertPageLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`a page limit must be a whole number from 1, got ${String(limit)}`);
}

function sameKey(a: StoreKey, b: StoreKey): boolean {
  return a.kind === b.kind && a.id === b.id && a.family === b.family;
}
