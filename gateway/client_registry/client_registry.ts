/**
 * The client registry: clients kept in the store beside the config file's (docs/configuration.md
 * `clientRegistry`, docs/architecture.md "Clients in the store"). Each gateway keeps what it looked
 * up in a bounded LRU cache, and unknown ids in a bounded negative cache, each entry for at most
 * `cacheTtlSeconds`; every write replaces the registry's version key, which every gateway reads
 * every `pollIntervalMs` and empties its caches when it changed. So a change made on one gateway
 * is seen on all within a poll interval plus one lookup, and one missed poll (a store outage) can
 * leave an entry stale for the TTL at most.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { registerStoredClient, type RegisteredClient } from '../../core/client_model.js';
import { hashHandle } from '../../core/store/handle.js';
import { StoreUnavailableError, type Store, type StoreKey } from '../../core/store/store.js';
import type { ClientConfig } from '../../core/worker_config.js';
import type { ClientMetadata } from './client_metadata.js';
import { backfillClientListing } from './client_listing_backfill.js';
import { StoredCorsOrigins } from './cors_origins.js';
import { changeRecord, type ChangedRecord, type ChangeOutcome } from './record_change.js';

/**
 * What dynamic client registration (RFC 7591) keeps beside a client it registered: the hash of
 * its registration access token (RFC 7592 §1.1) and its metadata as registered, which the
 * management protocol reads back (gateway/endpoints/registration_endpoint.ts).
 */
export interface ClientRegistration {
  /** base64url SHA-256 of the registration access token: the token itself is never stored. */
  readonly tokenHash: string;
  /** The client metadata as registered (RFC 7591 §2), without `client_id` and secrets. */
  readonly metadata: ClientMetadata;
}

/** A client as the store keeps it: the validated config (secrets as SHA-256 values) and when. */
export interface StoredClientRecord {
  readonly config: ClientConfig;
  /** Epoch ms. */
  readonly createdAt: number;
  /** Epoch ms. */
  readonly updatedAt: number;
  /** Present for a client that registered itself (RFC 7591); one write with its config. */
  readonly registration?: ClientRegistration;
}

/** One page of {@link ClientRegistry.list}: clients by `clientId`, and where the next page starts. */
export interface ClientPage {
  readonly clients: readonly StoredClientRecord[];
  /** The `after` of the next page (the last `clientId` of this one); `null` on the last. */
  readonly next: string | null;
}

export interface ClientRegistryOptions {
  readonly cacheSize: number;
  readonly negativeCacheSize: number;
  readonly cacheTtlMs: number;
  readonly pollIntervalMs: number;
  /** Store lookups at once (default {@link defaultMaxLookupsInFlight}); past it a lookup is refused as the store being unavailable. */
  readonly maxLookupsInFlight?: number;
  readonly logger: Logger;
  readonly now?: () => number;
  /** The listing migration's first wait after the store answered unavailable (default 1 s; tests shorten it). */
  readonly listingRetryDelayMs?: number;
}

// Every store-kept client is one record of one family, listed by its `clientId` (the key's
// `name`), so that the admin API pages them in `clientId` order at O(page) cost
// (`Store.listFamily`); a record needs a TTL (core/store/store.ts), renewed by every write.
const family = 'clients';
/** A store-kept client record's TTL: renewed by every write. */
export const storedClientTtlMs = 10 * 365 * 86_400_000;
const versionKey: StoreKey = { kind: 'client', id: 'version' };
/**
 * Store lookups of distinct uncached ids at once. Past it a request for an uncached client is
 * answered 503 + Retry-After at once instead of queueing behind a slow or frozen store
 * (docs/operations.md, "Clients in the store"); each lookup ends within the store's command bound.
 */
export const defaultMaxLookupsInFlight = 256;

/** Where client `clientId` is kept (exported for the bench, bench/scale/stored_clients.ts, to write the same records). */
export function storedClientKey(clientId: string): StoreKey {
  return { kind: 'client', id: hashHandle(clientId), family, name: clientId };
}

/** The record {@link ClientRegistry.write} stores for `config` at `now`; `kept` as there. */
export function storedClientRecord(
  config: ClientConfig,
  now: number,
  kept: { createdAt?: number; registration?: ClientRegistration | undefined } = {},
): StoredClientRecord {
  return {
    config,
    createdAt: kept.createdAt ?? now,
    updatedAt: now,
    ...(kept.registration === undefined ? {} : { registration: kept.registration }),
  };
}

/**
 * What a change ({@link ClientRegistry.change}) makes of the client as stored now: the config to
 * write (and the registration, when it changes one; kept otherwise), or a refusal `F` that ends
 * the change with nothing written. Called again with the new current record after a conflict, so
 * it must depend on nothing but its argument (and what it captured before).
 */
export type ClientEdit<F> =
  | { readonly config: ClientConfig; readonly registration?: ClientRegistration | undefined }
  | { readonly refused: F };

/** How a {@link ClientRegistry.change} ended (`conflict`: the client changed under every try, nothing written). */
export type ClientChange<F> = ChangeOutcome<StoredClientRecord, F>;

/** A lookup refused because {@link defaultMaxLookupsInFlight} (or the configured cap) are running: not itself a store failure. */
export class LookupCapError extends StoreUnavailableError {
  constructor() {
    super('too many client lookups in flight');
    this.name = 'LookupCapError';
  }
}

interface CachedClient {
  readonly client: RegisteredClient;
  readonly expiresAt: number;
  /** When the entry last moved to the end of the LRU order. */
  touchedAt: number;
}

export class ClientRegistry {
  readonly #store: Store;
  readonly #options: ClientRegistryOptions;
  readonly #now: () => number;
  readonly #found = new Map<string, CachedClient>();
  /** Unknown ids and until when they count as unknown. */
  readonly #unknown = new Map<string, number>();
  /** The store read of each id that later lookups of it share, and the generation it began in. */
  readonly #inFlight = new Map<string, { readonly generation: number; readonly lookup: Promise<RegisteredClient | undefined> }>();
  /**
   * Store reads running: the cap counts these, not {@link #inFlight}, since a read an invalidation
   * left behind (no longer shared) still holds a place at the store until it ends.
   */
  #reads = 0;
  /** Bumped by every invalidation: a lookup that began before one does not fill the cache. */
  #generation = 0;
  /** The version key as last read; `undefined` before the first read or after a failed one. */
  #version: string | null | undefined = undefined;
  #polling = false;
  #timer: NodeJS.Timeout | undefined;
  /** Store reads of a client record since start (tests, docs/operations.md "Admin API"). */
  storeLookups = 0;
  /** The origins store-kept clients allow, by origin (CORS), emptied with the client caches. */
  readonly origins: StoredCorsOrigins;
  /** Lookups refused at the cap since the last warning; 0 while none is. */
  #refusedAtCap = 0;

  constructor(store: Store, options: ClientRegistryOptions) {
    this.#store = store;
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.origins = new StoredCorsOrigins(store, {
      cacheSize: options.negativeCacheSize,
      cacheTtlMs: options.cacheTtlMs,
      recordTtlMs: storedClientTtlMs,
      clientOf: async (clientId) => (await this.read(clientId))?.config ?? null,
      logger: options.logger,
      ...(options.now === undefined ? {} : { now: options.now }),
    });
  }

  /**
   * What the listing's migration did (client_listing_backfill.ts): started by {@link start}, in
   * the background; resolves the clients it listed, `null` when the store had been migrated, or
   * `undefined` when it failed other than by the store being unavailable, which it waits out (logged; the next start tries again).
   */
  listingBackfill: Promise<number | null | undefined> = Promise.resolve(null);

  /**
   * Reads the version once, then polls it; never keeps the process alive. Lists the clients of
   * an older version in the background, once per store: start-up does not wait for it.
   */
  async start(): Promise<void> {
    await this.#poll();
    this.#timer = setInterval(() => void this.#poll(), this.#options.pollIntervalMs);
    this.#timer.unref();
    this.listingBackfill = backfillClientListing({
      store: this.#store,
      family,
      keyOf: storedClientKey,
      logger: this.#options.logger,
      markerTtlMs: storedClientTtlMs,
      stopped: () => this.#timer === undefined,
      indexOrigins: (config) => this.origins.index(config.clientId, null, config),
      ...(this.#options.listingRetryDelayMs === undefined ? {} : { retryDelayMs: this.#options.listingRetryDelayMs }),
    }).catch((err: unknown) => {
      this.#options.logger.warn({ err }, 'client listing: listing the older clients failed; the next start tries again');
      return undefined;
    });
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Store lookups running now (`tessera_client_registry_lookups_in_flight`). */
  get lookupsInFlight(): number {
    return this.#reads;
  }

  /** Clients in the LRU cache (at most `cacheSize`; expired entries go when next asked for). */
  get cachedClients(): number {
    return this.#found.size;
  }

  /** Ids remembered as unknown (at most `negativeCacheSize`). */
  get cachedUnknownIds(): number {
    return this.#unknown.size;
  }

  /** The cached client; `null` when `clientId` is cached as unknown; `undefined` when not cached. */
  cached(clientId: string): RegisteredClient | null | undefined {
    const now = this.#now();
    const found = this.#found.get(clientId);
    if (found !== undefined) {
      if (found.expiresAt > now) {
        // Least recently used first in Map order: a hit moves to the end, at most once a second.
        // Moving on every hit made one busy client in a full cache cost as much as a store lookup:
        // a Map keeps deleted entries until it rehashes, and re-adding a key walks past them
        // (docs/decisions/0026-stored-clients-at-scale.md).
        if (now - found.touchedAt >= 1000) {
          found.touchedAt = now;
          this.#found.delete(clientId);
          this.#found.set(clientId, found);
        }
        return found.client;
      }
      this.#found.delete(clientId);
    }
    const unknownUntil = this.#unknown.get(clientId);
    if (unknownUntil !== undefined) {
      if (unknownUntil > now) return null;
      this.#unknown.delete(clientId);
    }
    return undefined;
  }

  /**
   * Looks `clientId` up in the store and caches what it found, either way. Concurrent lookups of
   * one id share one store read, unless an invalidation came between them: a lookup after a
   * change must not get an answer read before it (a client created a moment ago found unknown).
   *
   * @throws StoreUnavailableError when the store cannot answer, or too many lookups are waiting.
   */
  lookup(clientId: string): Promise<RegisteredClient | undefined> {
    const generation = this.#generation;
    const pending = this.#inFlight.get(clientId);
    if (pending !== undefined && pending.generation === generation) return pending.lookup;
    const cap = this.#options.maxLookupsInFlight ?? defaultMaxLookupsInFlight;
    if (this.#reads >= cap) {
      this.#refusedAtCap += 1;
      // Once per episode, not once per refused request: the id is no secret, but a flood of
      // random ids would otherwise write a line each (the store outage log does the same).
      if (this.#refusedAtCap === 1) {
        this.#options.logger.warn(
          { maxLookupsInFlight: cap },
          'client registry: store lookups at their cap; requests for clients not cached are answered 503 until lookups end',
        );
      }
      return Promise.reject(new LookupCapError());
    }
    this.#reads += 1;
    const lookup: Promise<RegisteredClient | undefined> = this.#read(clientId).then(
      (record) => {
        this.#settled(clientId, lookup);
        const client = record === null || record.config.clientId !== clientId ? undefined : registerStoredClient(record.config);
        if (generation === this.#generation) this.#remember(clientId, client);
        return client;
      },
      (err: unknown) => {
        this.#settled(clientId, lookup);
        throw err;
      },
    );
    this.#inFlight.set(clientId, { generation, lookup });
    return lookup;
  }

  /** The stored record, uncached (the admin API). */
  async read(clientId: string): Promise<StoredClientRecord | null> {
    const record = await this.#store.get<StoredClientRecord>(storedClientKey(clientId));
    return record !== null && record.config.clientId === clientId ? record : null;
  }

  /**
   * Writes a new client unless a live record holds its id already (one atomic `putIfAbsent`, so
   * of concurrent creations of one id, on any gateways, exactly one wins), and tells every gateway
   * as {@link write} does. Resolves the record written, or `null` when the id was taken.
   */
  async add(config: ClientConfig): Promise<StoredClientRecord | null> {
    const record = storedClientRecord(config, this.#now());
    const stored = await this.#store.putIfAbsent(storedClientKey(config.clientId), record, storedClientTtlMs);
    // Every caller gets what is stored. Another creation's record differs from ours by its
    // generated secret; two identical ones (no secret, the same millisecond) both stand, harmlessly.
    if (JSON.stringify(stored) !== JSON.stringify(record)) return null;
    await this.origins.index(config.clientId, null, config);
    await this.#changed();
    return record;
  }

  /**
   * Writes a client under a new id this registry made up itself (dynamic client registration's
   * 128 random bits, RFC 7591 §3.2.1), without telling the other gateways: no gateway can have
   * cached an id nobody knew, so there is nothing to forget. Replacing the version key would empty
   * every gateway's cache and send all their active clients to the store at once (past the lookup
   * cap: 503s), for each registration, which an open registration endpoint lets anyone ask for.
   * Registration metadata has no CORS origins (RFC 7591 §2), so the origin index is not touched.
   */
  async create(config: ClientConfig, registration: ClientRegistration): Promise<StoredClientRecord> {
    const record = storedClientRecord(config, this.#now(), { registration });
    await this.#store.set(storedClientKey(config.clientId), record, storedClientTtlMs);
    this.#unknown.delete(config.clientId);
    return record;
  }

  /**
   * Writes a client whatever is stored, and tells every gateway (the version key). `kept`: what
   * the record had and keeps (its creation time, a registration). A change of an existing client
   * uses {@link change} instead: this overwrites a concurrent change, or a deletion.
   */
  async write(
    config: ClientConfig,
    kept: { createdAt?: number; registration?: ClientRegistration | undefined } = {},
  ): Promise<StoredClientRecord> {
    const record = storedClientRecord(config, this.#now(), kept);
    const previous = await this.read(config.clientId);
    await this.#store.set(storedClientKey(config.clientId), record, storedClientTtlMs);
    await this.origins.index(config.clientId, previous?.config ?? null, config);
    await this.#changed();
    return record;
  }

  /**
   * Changes a stored client without losing a concurrent change and without bringing back a
   * deleted one (docs/operations.md, "Admin API"): `changeRecord` reads the record, lets `edit`
   * make the new config of it (checked there, as every change is), and replaces the record only
   * if it is still the one read, running `edit` again on the record stored now after a conflict,
   * up to `maxChangeAttempts` times; when the client is gone, `missing`. The CORS origin index
   * follows the record actually replaced, then the client as stored once its indexing ends
   * (`StoredCorsOrigins.index`): a concurrent change's may have run first.
   */
  async change<F>(clientId: string, edit: (current: StoredClientRecord) => ClientEdit<F>): Promise<ClientChange<F>> {
    const outcome = await changeRecord(this.#store, this.#changedRecord(clientId), (current) => {
      const edited = edit(current);
      if ('refused' in edited) return edited;
      const registration = 'registration' in edited ? edited.registration : current.registration;
      return { next: storedClientRecord(edited.config, this.#now(), { createdAt: current.createdAt, registration }) };
    });
    if (outcome.status !== 'written') return outcome.status === 'conflict' ? { status: 'conflict' } : outcome;
    await this.origins.index(clientId, outcome.previous.config, outcome.next.config);
    await this.#changed();
    return { status: 'written', record: outcome.next };
  }

  /**
   * Removes a client; resolves whether there was one. The record read is deleted only if it is
   * still the one stored, so that the origin index loses exactly the origins of the client
   * removed; a client that keeps changing past `maxChangeAttempts` tries is deleted anyway
   * (a deletion is never refused for a concurrent change), and index entries a later change wrote
   * allow nothing without their client (cors_origins.ts).
   */
  async remove(clientId: string): Promise<boolean> {
    const record = this.#changedRecord(clientId);
    const outcome = await changeRecord<StoredClientRecord, null, never>(this.#store, record, () => ({ next: null }));
    if (outcome.status === 'missing' || outcome.status === 'refused') return false;
    const removed = outcome.status === 'written' || (await this.#store.delete(record.key));
    await this.origins.index(clientId, (outcome.status === 'written' ? outcome.previous : outcome.current).config, null);
    await this.#changed();
    return removed;
  }

  /** Client `clientId`'s record as {@link changeRecord} changes it. */
  #changedRecord(clientId: string): ChangedRecord<StoredClientRecord> {
    return { key: storedClientKey(clientId), ttlMs: storedClientTtlMs, owns: (record) => record.config.clientId === clientId };
  }

  /**
   * Store-kept clients ordered by `clientId` (its UTF-8 bytes), `limit` from the first after
   * `after`: one store call that reads about `limit` records, however many clients are stored
   * (`Store.listFamily`).
   */
  async list(after: string | undefined, limit: number): Promise<ClientPage> {
    const page = await this.#store.listFamily<StoredClientRecord>(family, after, limit);
    const clients = page.records.filter((r) => r.value.config.clientId === r.name).map((r) => r.value);
    return { clients, next: page.next };
  }

  /** Empties both caches; lookups in flight then do not fill them. */
  invalidate(): void {
    this.#generation += 1;
    this.#found.clear();
    this.#unknown.clear();
    this.origins.invalidate();
  }

  /** A lookup ended; the last one ends a cap episode with one line of how many were refused. */
  #settled(clientId: string, lookup: Promise<RegisteredClient | undefined>): void {
    this.#reads -= 1;
    // A newer read of the same id (after an invalidation) stays shared.
    if (this.#inFlight.get(clientId)?.lookup === lookup) this.#inFlight.delete(clientId);
    if (this.#reads === 0 && this.#refusedAtCap > 0) {
      this.#options.logger.warn({ refusedLookups: this.#refusedAtCap }, 'client registry: store lookups below their cap again');
      this.#refusedAtCap = 0;
    }
  }

  async #read(clientId: string): Promise<StoredClientRecord | null> {
    this.storeLookups += 1;
    return await this.#store.get<StoredClientRecord>(storedClientKey(clientId));
  }

  #remember(clientId: string, client: RegisteredClient | undefined): void {
    const expiresAt = this.#now() + this.#options.cacheTtlMs;
    if (client !== undefined) {
      this.#unknown.delete(clientId);
      this.#found.delete(clientId);
      this.#found.set(clientId, { client, expiresAt, touchedAt: this.#now() });
      if (this.#found.size > this.#options.cacheSize) this.#found.delete(this.#found.keys().next().value as string);
    } else {
      this.#unknown.delete(clientId);
      this.#unknown.set(clientId, expiresAt);
      if (this.#unknown.size > this.#options.negativeCacheSize) this.#unknown.delete(this.#unknown.keys().next().value as string);
    }
  }

  /** After a write: this gateway forgets at once, the others at their next poll. */
  async #changed(): Promise<void> {
    this.invalidate();
    const version = randomUUID();
    await this.#store.set(versionKey, version, storedClientTtlMs);
    // Our own change: no need to empty the cache again at the next poll.
    this.#version = version;
  }

  async #poll(): Promise<void> {
    if (this.#polling) return;
    this.#polling = true;
    try {
      const version = await this.#store.get<string>(versionKey);
      if (version !== this.#version) {
        // The first read, or one after a failed read, cannot tell what changed meanwhile.
        this.invalidate();
        this.#version = version;
      }
    } catch (err) {
      // Changes made meanwhile show as a new version once the store answers; until then no entry
      // outlives its TTL.
      this.#version = undefined;
      this.#options.logger.debug({ err }, 'client registry: version not read');
    } finally {
      this.#polling = false;
    }
  }
}
