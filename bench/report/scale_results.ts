/**
 * The `scale` bench's figures (`npm run bench -- scale`, bench/scale/): their place in the results
 * file (`scale`) and the arithmetic on them (growth per client, ratios, bytes per record). The
 * console tables are in scale.ts.
 */
import type { StoreKind } from '../scenarios/scenario.js';
import { median, medianOrNull } from '../support/stats.js';

/** One gateway start: `tessera start` to `/readyz` 200, and RSS once ready. */
export interface StartUpRow {
  clients: number;
  store: StoreKind;
  readyMs: number;
  rssBytes: number | null;
}

/** Between two client counts on one store: what each further client cost. */
export interface StartUpGrowth {
  store: StoreKind;
  fromClients: number;
  toClients: number;
  /** Start-up time per 1,000 further clients, ms. */
  msPerThousand: number;
  /** RSS per further client, bytes (null when RSS was not read). */
  bytesPerClient: number | null;
}

/** One measured run of one load (bench/scale/interleaved_cost.ts). */
export interface CostRound {
  round: number;
  rps: number;
  serverUsPerRequest: number | null;
  serverCores: number | null;
  loadgenCores: number | null;
  otherCores: number | null;
  p50Ms: number;
  p99Ms: number;
  valid: boolean;
  invalidReason: string | null;
  /** With a store watched (`scale-store`): redis-server CPU per request, µs, and its `GET`s per request. */
  storeUsPerRequest?: number | null;
  storeReadsPerRequest?: number | null;
}

/** One row of the client_credentials cost table. */
export interface CostRow {
  id: string;
  label: string;
  /** Clients in the gateway's config. */
  clients: number;
  /** Distinct clients the load cycles over. */
  cycled: number;
  /** Extension grant validators loaded. */
  validators: number;
  rounds: CostRound[];
}

/** What one kind of record holds in a store, from `count` of them. */
export interface StoreRow {
  store: StoreKind;
  item: 'family' | 'device_code';
  count: number;
  /** Growth of Redis `used_memory`, or of the memory store's heap, over the writes. */
  bytes: number;
  seconds: number;
}

export interface ScaleResults {
  startUp: StartUpRow[];
  cost: CostRow[];
  /** The id of the row the others are compared with (10 clients, no validators). */
  costReference: string | null;
  /** `Authorization` headers the gateway remembers at most (gateway/client_authentication/authenticator.ts). */
  basicHeaderCacheEntries: number;
  store: StoreRow[];
  /** Of the redis-server the records were written to. */
  redisVersion: string | null;
  /**
   * Clients kept in the store, by count (`scale-store`); absent from runs before it, empty when
   * the part did not run.
   */
  storedClients?: StoredClientsResults | null;
  /** Problems that kept a part from running (a part that threw), or none. */
  failures: string[];
}

/** Per store, from each client count to the next: ms per 1,000 further clients and bytes per client. */
export function startUpGrowth(rows: readonly StartUpRow[]): StartUpGrowth[] {
  const growth: StartUpGrowth[] = [];
  for (const store of [...new Set(rows.map((row) => row.store))]) {
    const sorted = rows.filter((row) => row.store === store).sort((a, b) => a.clients - b.clients);
    for (let i = 1; i < sorted.length; i++) {
      const from = sorted[i - 1] as StartUpRow;
      const to = sorted[i] as StartUpRow;
      const added = to.clients - from.clients;
      if (added <= 0) continue;
      growth.push({
        store,
        fromClients: from.clients,
        toClients: to.clients,
        msPerThousand: ((to.readyMs - from.readyMs) / added) * 1000,
        bytesPerClient: from.rssBytes === null || to.rssBytes === null ? null : (to.rssBytes - from.rssBytes) / added,
      });
    }
  }
  return growth;
}

/**
 * Whether a cost grows faster than linearly with the client count: a further client costs more
 * (over `tolerance` times as much) at the highest step than at the first. Linear growth keeps the
 * cost per further client flat; a quadratic step from 10k to 100k clients would cost about 10x
 * per client what the step from 10 to 10k did.
 */
export function growsFasterThanLinearly(perClient: readonly (number | null)[], tolerance = 2): boolean {
  const known = perClient.filter((value): value is number => value !== null && Number.isFinite(value));
  const first = known[0];
  const last = known[known.length - 1];
  if (first === undefined || last === undefined || known.length < 2) return false;
  // A first step that cost nothing per client (noise around zero) cannot be compared with.
  if (first <= 0) return last > 0 && last > Math.abs(first) * tolerance && last > 1e-9;
  return last > first * tolerance;
}

export function medianUs(row: CostRow): number | null {
  return medianOrNull(row.rounds.filter((round) => round.valid).map((round) => round.serverUsPerRequest));
}

export function medianRps(row: CostRow): number | null {
  const valid = row.rounds.filter((round) => round.valid);
  return valid.length === 0 ? null : median(valid.map((round) => round.rps));
}

/** A row's median server µs per request ÷ the reference row's; null when either has none. */
export function costRatio(row: CostRow, reference: CostRow | undefined): number | null {
  const us = medianUs(row);
  const base = reference === undefined ? null : medianUs(reference);
  return us === null || base === null || base <= 0 ? null : us / base;
}

/** Bytes per record: the growth ÷ the records written. */
export function bytesPerItem(row: StoreRow): number {
  return row.count > 0 ? row.bytes / row.count : Number.NaN;
}

/**
 * One count of clients kept in the store (`clientRegistry.store`, docs/architecture.md "Clients in
 * the store"), seeded into Redis with the registry's own records (bench/scale/stored_clients.ts).
 */
export interface StoredClientsRow {
  /** Clients kept in the store (the config file has one more: the bench's `m2m`). */
  clients: number;
  /** Seconds to write the clients added since the previous row. */
  seedSeconds: number;
  /** redis-server `used_memory` once they are written; null when not read. */
  redisUsedBytes: number | null;
  /** `tessera start` to `/readyz` 200, ms. */
  readyMs: number;
  /** RSS a second after ready, and after every load of this row. */
  rssBytes: number | null;
  rssAfterLoadBytes: number | null;
  /** client_credentials loads over `cycled` distinct stored clients, interleaved within the row. */
  loads: CostRow[];
}

/** The stored-clients part of a scale run (`npm run bench -- scale-store`). */
export interface StoredClientsResults {
  rows: StoredClientsRow[];
  /** `clientRegistry.cacheSize` of the gateways: a load over more ids misses the cache on every request. */
  cacheSize: number;
}
