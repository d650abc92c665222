/**
 * Puts the store-kept clients written before the client listing existed into it, once per store
 * (docs/operations.md, "Admin API", "Listing"). Since the listing came, every write of a client
 * lists it in the same atomic step (`StoreKey.name`); a client written by an older gateway is in
 * the `clients` family but not in the listing, and the admin API would not page it.
 *
 * Walks the family a batch at a time (`Store.scanFamily`, Redis `SSCAN`), lists each batch in one
 * atomic step that skips clients deleted meanwhile (`Store.listRecords`), logs its progress, and
 * then writes a marker, so that later starts skip the walk. Listing twice is harmless: gateways
 * that start together may each walk.
 */
import type { Logger } from 'pino';
import { StoreUnavailableError, type Store, type StoreKey } from '../../core/store/store.js';
import type { ClientConfig } from '../../core/worker_config.js';

/** Written once the family is listed: a start that finds it does not walk. */
export const clientListingMarkerKey: StoreKey = { kind: 'client', id: 'listed' };

export interface ClientListingBackfill {
  readonly store: Store;
  readonly family: string;
  /** The record's key, with its listing name, for a client id. */
  readonly keyOf: (clientId: string) => StoreKey;
  readonly logger: Logger;
  /** Clients per batch (default 1000). */
  readonly batch?: number;
  /** How long the marker is kept. */
  readonly markerTtlMs: number;
  /** Progress lines at most this often (default 10 s). */
  readonly progressEveryMs?: number;
  /** The first wait after a step failed as unavailable (default 1 s), doubled up to 30 s. */
  readonly retryDelayMs?: number;
  /** True once the registry stopped: the walk ends at its next step. */
  readonly stopped?: () => boolean;
  /**
   * Writes the CORS origin index entries of a client an older version wrote (it wrote none;
   * cors_origins.ts): a client with `allowedCorsOrigins` is then served CORS without a PATCH.
   */
  readonly indexOrigins?: (config: ClientConfig) => Promise<void>;
}

/**
 * `step` again while the store answers unavailable (a stall, a failover, a busy start): the walk
 * resumes from the batch it was on rather than waiting for the next start, which on a long-lived
 * gateway could be weeks. Any other error ends the walk.
 */
async function retried<T>(options: ClientListingBackfill, step: () => Promise<T>): Promise<T> {
  let delay = options.retryDelayMs ?? 1000;
  for (;;) {
    try {
      return await step();
    } catch (err) {
      if (!(err instanceof StoreUnavailableError) || options.stopped?.() === true) throw err;
      options.logger.warn({ retryInMs: delay }, `client listing: the store is unavailable (${err.message}); trying again`);
      await new Promise((resolve) => setTimeout(resolve, delay).unref());
      delay = Math.min(delay * 2, 30_000);
    }
  }
}

/** Lists the family's unlisted clients unless the marker says it was done; resolves how many were listed, or `null` when done before. */
export async function backfillClientListing(options: ClientListingBackfill): Promise<number | null> {
  const { store, family, keyOf, logger } = options;
  if ((await retried(options, () => store.get(clientListingMarkerKey))) !== null) return null;
  const started = performance.now();
  let lastProgress = started;
  let seen = 0;
  let listed = 0;
  let cursor: string | undefined;
  logger.info('client listing: listing the store-kept clients written before it (once per store)');
  do {
    if (options.stopped?.() === true) throw new Error('the registry stopped before the walk ended');
    const from = cursor;
    const scan = await retried(options, () =>
      store.scanFamily<{ config?: { clientId?: unknown; allowedCorsOrigins?: unknown } }>(family, 'client', from, options.batch ?? 1000),
    );
    const keys: StoreKey[] = [];
    for (const record of scan.records) {
      const clientId = record.config?.clientId;
      if (typeof clientId === 'string' && !clientId.includes('\u0000')) keys.push(keyOf(clientId));
      const origins = record.config?.allowedCorsOrigins;
      if (options.indexOrigins !== undefined && Array.isArray(origins) && origins.length > 0) {
        const config = record.config as ClientConfig;
        await retried(options, () => (options.indexOrigins as (config: ClientConfig) => Promise<void>)(config));
      }
    }
    seen += scan.records.length;
    if (keys.length > 0) listed += await retried(options, () => store.listRecords(keys));
    cursor = scan.cursor ?? undefined;
    const now = performance.now();
    if (cursor !== undefined && now - lastProgress >= (options.progressEveryMs ?? 10_000)) {
      lastProgress = now;
      logger.info({ seen, listed }, `client listing: ${seen} store-kept clients read, ${listed} listed so far`);
    }
  } while (cursor !== undefined);
  await retried(options, () => store.set(clientListingMarkerKey, { at: Date.now() }, options.markerTtlMs));
  const seconds = Math.round((performance.now() - started) / 100) / 10;
  logger.info({ seen, listed, seconds }, `client listing: ${listed} store-kept clients listed in ${seconds} s`);
  return listed;
}
