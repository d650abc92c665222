/**
 * The browser origins store-kept clients allow (`allowedCorsOrigins`, docs/endpoints.md "CORS"),
 * found by origin: a CORS request names an origin, never a client, so the registry keeps an index
 * beside the clients. Each enabled client's origin is one record in the family of that origin, so
 * that two clients written at once on two gateways never overwrite each other's entries; an origin
 * is allowed while its family holds a record. Each gateway caches the answers (allowed or not) in
 * a bounded map the client registry empties with its own caches (the version key), so a change is
 * seen everywhere within the same second as a client change.
 */
import type { Logger } from 'pino';
import { hashHandle } from '../../core/store/handle.js';
import type { Store, StoreKey } from '../../core/store/store.js';
import type { ClientConfig } from '../../core/worker_config.js';

export interface CorsOriginsOptions {
  /** Origins each gateway remembers (allowed or not); past it the oldest goes. */
  readonly cacheSize: number;
  readonly cacheTtlMs: number;
  /** The index records' TTL: a client record's, renewed by every write. */
  readonly recordTtlMs: number;
  /** Lookups at once (default {@link defaultMaxOriginLookups}); past it an origin counts as not allowed this time (not cached). */
  readonly maxLookupsInFlight?: number;
  /** Told once when lookups begin to allow nothing for want of an answer, and once when they are answered again. */
  readonly logger?: Logger;
  /**
   * The client an index entry names, as stored now (`null`: gone). The index is written after its
   * client, not with it: an entry a crash or a failed delete left behind must not allow an origin
   * its client no longer lists, so a lookup checks the client itself.
   */
  readonly clientOf?: (clientId: string) => Promise<ClientConfig | null>;
  readonly now?: () => number;
}

/**
 * Store lookups of origins at once (one per origin, and one a client change left behind, no longer
 * shared, until it ends). Past it a request from another origin not cached is answered at once
 * without CORS headers, rather than wait behind a slow or frozen store (docs/operations.md,
 * "Limits"); each lookup ends within its store calls' bounds.
 */
export const defaultMaxOriginLookups = 256;

interface OriginEntry {
  readonly clientId: string;
  readonly origin: string;
}

/** The store family whose records are the index entries of `origin` (one per enabled client listing it). */
export function originFamily(origin: string): string {
  return `cors-${hashHandle(origin)}`;
}

function entryKey(origin: string, clientId: string): StoreKey {
  return { kind: 'client', id: `cors:${hashHandle(`${origin}\n${clientId}`)}`, family: originFamily(origin) };
}

/** The origins a client's config lets browsers call from: none while it is disabled. */
function originsOf(config: ClientConfig | null | undefined): ReadonlySet<string> {
  return new Set(config === null || config === undefined || !config.enabled ? [] : config.allowedCorsOrigins);
}

export class StoredCorsOrigins {
  readonly #store: Store;
  readonly #options: CorsOriginsOptions;
  readonly #now: () => number;
  readonly #known = new Map<string, { readonly allowed: boolean; readonly expiresAt: number }>();
  /** The store read of each origin that later lookups of it share, and the generation it began in. */
  readonly #inFlight = new Map<string, { readonly generation: number; readonly lookup: Promise<boolean> }>();
  /**
   * Store reads running: the cap and the gauge count these, not {@link #inFlight}, since a read an
   * invalidation left behind (no longer shared) still holds a place at the store until it ends.
   */
  #reads = 0;
  /** Bumped by every invalidation: a lookup that began before one is neither shared after it nor cached. */
  #generation = 0;
  /** Lookups that allowed nothing because the store did not answer, or at the cap, since the first of them; 0 while none. */
  #unanswered = 0;
  /** Store reads of an origin since start (tests). */
  storeLookups = 0;

  constructor(store: Store, options: CorsOriginsOptions) {
    this.#store = store;
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** Store lookups of origins running now (`tessera_client_registry_origin_lookups_in_flight`). */
  get lookupsInFlight(): number {
    return this.#reads;
  }

  /** Origins remembered, allowed or not (at most `cacheSize`; expired ones go when next asked for). */
  get cachedOrigins(): number {
    return this.#known.size;
  }

  /** Whether a store-kept client allows `origin`, when this gateway knows; `undefined` otherwise. */
  cached(origin: string): boolean | undefined {
    const entry = this.#known.get(origin);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > this.#now()) return entry.allowed;
    this.#known.delete(origin);
    return undefined;
  }

  /**
   * Whether an enabled store-kept client allows `origin`: one store read, shared by concurrent
   * requests, cached either way. A lookup after an invalidation (a client change) never shares a
   * read begun before it, as the client registry's lookups do not: that read may hold the answer
   * from before the change (an origin just removed still allowed). Never rejects: a store that
   * cannot answer allows nothing this time (a browser then cannot read the answer; the request
   * itself is served as it would be), nor do lookups past the cap.
   */
  lookup(origin: string): Promise<boolean> {
    const generation = this.#generation;
    const pending = this.#inFlight.get(origin);
    if (pending !== undefined && pending.generation === generation) return pending.lookup;
    if (this.#reads >= (this.#options.maxLookupsInFlight ?? defaultMaxOriginLookups)) {
      this.#notAnswered();
      return Promise.resolve(false);
    }
    this.#reads += 1;
    this.storeLookups += 1;
    const lookup = this.#store.familyRecords<OriginEntry>(originFamily(origin), 'client').then(
      async (entries) => {
        // A client that cannot be read allows nothing this time, as a failed index read: not cached.
        const allowed = await this.#anyStillAllows(
          entries.filter((e) => e.origin === origin),
          origin,
        ).catch(() => undefined);
        this.#settled(origin, lookup);
        if (allowed === undefined) this.#notAnswered();
        else {
          if (generation === this.#generation) this.#remember(origin, allowed);
          this.#answered();
        }
        return allowed === true;
      },
      () => {
        this.#settled(origin, lookup);
        this.#notAnswered();
        return false;
      },
    );
    this.#inFlight.set(origin, { generation, lookup });
    return lookup;
  }

  /** A store read of `origin` ended; a newer one of it (begun after an invalidation) stays shared. */
  #settled(origin: string, lookup: Promise<boolean>): void {
    this.#reads -= 1;
    if (this.#inFlight.get(origin)?.lookup === lookup) this.#inFlight.delete(origin);
  }

  /** Whether one of the clients the entries name still allows `origin` (each read until one does). */
  async #anyStillAllows(entries: readonly OriginEntry[], origin: string): Promise<boolean> {
    const clientOf = this.#options.clientOf;
    if (clientOf === undefined) return entries.length > 0;
    for (const entry of entries) {
      if (originsOf(await clientOf(entry.clientId)).has(origin)) return true;
    }
    return false;
  }

  /** Forgets every answer; lookups in flight then neither fill the cache nor are shared by later ones. */
  invalidate(): void {
    this.#generation += 1;
    this.#known.clear();
  }

  /**
   * Brings the index in line with a change of client `clientId` from `previous` (`null`: created)
   * to `next` (`null`: deleted): origins it no longer allows are removed, those it allows
   * (re)written; then the client is read again. Two changes of one client made at once (on one
   * gateway or two) index concurrently, and the earlier one's writes can land after the later
   * one's: a removal of an origin the later change lists again would refuse it until the next
   * change. So while the client as read differs from what was just indexed, the index is brought
   * in line with it once more, removing every origin this call saw listed: each change's indexing
   * ends with what the client lists at its end, and the last change's read is of the last client
   * (docs/endpoints.md, "CORS"). Another round needs another change written meanwhile, so this
   * ends once changes stop. Without `clientOf`, one round.
   */
  async index(clientId: string, previous: ClientConfig | null, next: ClientConfig | null): Promise<void> {
    const seen = new Set(originsOf(previous));
    let wanted = originsOf(next);
    for (;;) {
      for (const origin of seen) if (!wanted.has(origin)) await this.#store.delete(entryKey(origin, clientId));
      for (const origin of wanted) {
        const entry: OriginEntry = { clientId, origin };
        await this.#store.set(entryKey(origin, clientId), entry, this.#options.recordTtlMs);
        seen.add(origin);
      }
      const clientOf = this.#options.clientOf;
      if (clientOf === undefined) return;
      const stored = originsOf(await clientOf(clientId));
      if (stored.size === wanted.size && [...stored].every((origin) => wanted.has(origin))) return;
      wanted = stored;
    }
  }

  /**
   * A lookup allowed nothing for want of an answer: the first of an episode is logged, not each
   * one (a frozen store fails every new origin's lookup; the origins are not logged, as random
   * ones sent in a flood would otherwise each write a line).
   */
  #notAnswered(): void {
    this.#unanswered += 1;
    if (this.#unanswered === 1) {
      this.#options.logger?.warn(
        { maxLookupsInFlight: this.#options.maxLookupsInFlight ?? defaultMaxOriginLookups },
        'CORS: store-kept origins not looked up (store unavailable, or lookups at their cap); requests from origins not cached are answered without CORS headers until lookups are answered again',
      );
    }
  }

  /** A lookup the store answered: with none left waiting, the episode ends with one line of its count. */
  #answered(): void {
    if (this.#unanswered === 0 || this.#reads > 0) return;
    this.#options.logger?.warn({ unansweredLookups: this.#unanswered }, 'CORS: origin lookups are answered again');
    this.#unanswered = 0;
  }

  #remember(origin: string, allowed: boolean): void {
    this.#known.delete(origin);
    this.#known.set(origin, { allowed, expiresAt: this.#now() + this.#options.cacheTtlMs });
    if (this.#known.size > this.#options.cacheSize) this.#known.delete(this.#known.keys().next().value as string);
  }
}
