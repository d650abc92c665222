/**
 * API resources kept in the store beside the config file's (docs/configuration.md,
 * `clientRegistry`; docs/operations.md, "Admin API"). Unlike clients, which may be millions and
 * are looked up one at a time, API resources are few (at most {@link maxStoredApiResources}):
 * each gateway holds them all in memory, read again whenever their version key changes (read every
 * `pollIntervalMs`, as the client registry's is), so every reader (introspection, scope rules,
 * audiences) asks synchronously and a request that names none costs nothing more. The workers get
 * names and scopes through shared memory (`wire/api_resource_cell.ts`); secrets stay here, where
 * introspection authenticates resources.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { decodeSecrets, type StoredSecret } from '../../core/client_model.js';
import type { ScopeRules } from '../../core/rules/scope_rules.js';
import { hashHandle } from '../../core/store/handle.js';
import { isStoreUnavailable, type Store, type StoreKey } from '../../core/store/store.js';
import type { ApiResourceConfig, SecretConfig } from '../../core/worker_config.js';
import { defaultApiResourceCellBytes, type ApiResourceCell } from '../../wire/api_resource_cell.js';
import type { LoadedConfig } from '../config/load.js';
import { changeRecord, type ChangeOutcome } from './record_change.js';

/** A store-kept API resource as the config file writes one (`apiResources[i]`), secrets as SHA-256 values. */
export interface StoredApiResource extends ApiResourceConfig {
  readonly secrets: readonly SecretConfig[];
}

export interface StoredApiResourceRecord {
  readonly resource: StoredApiResource;
  /** Epoch ms. */
  readonly createdAt: number;
  /** Epoch ms. */
  readonly updatedAt: number;
}

/**
 * What a change ({@link ApiResourceRegistry.change}) makes of the resource as stored now: the
 * resource to write, or a refusal `F` (nothing written). Called again with the new current record
 * after a conflict, so it must depend on nothing but its argument (and what it captured before).
 */
export type ApiResourceEdit<F> = { readonly resource: StoredApiResource } | { readonly refused: F };

/** How an {@link ApiResourceRegistry.change} ended (`conflict`: the resource changed under every try, nothing written). */
export type ApiResourceChange<F> = ChangeOutcome<StoredApiResourceRecord, F>;

export interface ApiResourcePage {
  readonly resources: readonly StoredApiResourceRecord[];
  readonly next: string | null;
}

/** Store-kept API resources at most: all are held in memory on every gateway and thread. */
export const maxStoredApiResources = 1000;
const family = 'api-resources';
const recordTtlMs = 10 * 365 * 86_400_000;
const versionKey: StoreKey = { kind: 'client', id: 'api-resources-version' };

function resourceKey(name: string): StoreKey {
  return { kind: 'client', id: `api:${hashHandle(name)}`, family };
}

export interface ApiResourceRegistryOptions {
  readonly pollIntervalMs: number;
  readonly cell: ApiResourceCell;
  readonly logger: Logger;
  readonly now?: () => number;
}

export class ApiResourceRegistry {
  readonly #store: Store;
  readonly #options: ApiResourceRegistryOptions;
  readonly #now: () => number;
  #records: ReadonlyMap<string, StoredApiResourceRecord> = new Map();
  #secrets: ReadonlyMap<string, readonly StoredSecret[]> = new Map();
  #version: string | null | undefined = undefined;
  /** Bumped each time a new set is taken into service (discovery rebuilds its body on it). */
  generation = 0;
  #polling = false;
  #timer: NodeJS.Timeout | undefined;
  /** Scope rules that follow the set (the gateway's, one per route set); gone ones drop out. */
  readonly #followers = new Set<WeakRef<ScopeRules>>();

  constructor(store: Store, options: ApiResourceRegistryOptions) {
    this.#store = store;
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** Reads the set once, then polls its version; never keeps the process alive. */
  async start(): Promise<void> {
    await this.#poll();
    this.#timer = setInterval(() => void this.#poll(), this.#options.pollIntervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** The store-kept resources as last read. */
  resources(): readonly StoredApiResource[] {
    return [...this.#records.values()].map((r) => r.resource);
  }

  /** A store-kept resource's decoded secrets (introspection), or `undefined` when there is none of that name. */
  secretsOf(name: string): readonly StoredSecret[] | undefined {
    return this.#secrets.get(name);
  }

  /** Keeps `scopes` in line with the set from now on (gateway/endpoints/routes.ts). */
  follow(scopes: ScopeRules): void {
    scopes.useStoredResources(this.resources());
    this.#followers.add(new WeakRef(scopes));
  }

  /** The stored record, uncached (the admin API). */
  async read(name: string): Promise<StoredApiResourceRecord | null> {
    const record = await this.#store.get<StoredApiResourceRecord>(resourceKey(name));
    return record !== null && record.resource.name === name ? record : null;
  }

  /** Store-kept resources by name, `limit` from the first after `after` (from memory: they are few). */
  list(after: string | undefined, limit: number): ApiResourcePage {
    const all = [...this.#records.values()].sort((a, b) => (a.resource.name < b.resource.name ? -1 : 1));
    const from = after === undefined ? all : all.filter((r) => r.resource.name > after);
    const resources = from.slice(0, limit);
    const last = resources.at(-1);
    return { resources, next: from.length > limit && last !== undefined ? last.resource.name : null };
  }

  /** Whether one more resource may be created. */
  get full(): boolean {
    return this.#records.size >= maxStoredApiResources;
  }

  /**
   * Whether the set with `resource` written still fits the workers' shared memory
   * (`defaultApiResourceCellBytes`): a set that did not would never reach them.
   */
  fits(resource: StoredApiResource): boolean {
    const others = [...this.#records.values()].filter((r) => r.resource.name !== resource.name).map((r) => r.resource);
    const encoded = JSON.stringify({ resources: [...others, resource].map((r) => ({ name: r.name, scopes: r.scopes })) });
    return Buffer.byteLength(encoded) <= defaultApiResourceCellBytes;
  }

  /**
   * Writes a new resource unless a live record holds its name already (one atomic `putIfAbsent`,
   * so of concurrent creations of one name, on any gateways, exactly one wins), and tells every
   * gateway; this one reads the set again at once. Resolves the record written, or `null` when
   * the name was taken.
   */
  async add(resource: StoredApiResource): Promise<StoredApiResourceRecord | null> {
    const now = this.#now();
    const record: StoredApiResourceRecord = { resource, createdAt: now, updatedAt: now };
    const stored = await this.#store.putIfAbsent(resourceKey(resource.name), record, recordTtlMs);
    // As for clients (ClientRegistry.add): another creation's record differs from ours by its
    // generated secret; two identical ones (the same secrets given, the same millisecond) both
    // stand, harmlessly.
    if (JSON.stringify(stored) !== JSON.stringify(record)) return null;
    await this.#changed();
    return record;
  }

  /**
   * Changes a stored resource without losing a concurrent change (a secret added meanwhile) and
   * without bringing back a deleted one (docs/operations.md, "Admin API"): the compare-and-set
   * loop of `changeRecord`, as for clients; `edit` (where the change is checked) runs again on the
   * resource as stored now after each conflict. Tells every gateway when it wrote.
   */
  async change<F>(name: string, edit: (current: StoredApiResourceRecord) => ApiResourceEdit<F>): Promise<ApiResourceChange<F>> {
    const owns = (record: StoredApiResourceRecord): boolean => record.resource.name === name;
    const outcome = await changeRecord(this.#store, { key: resourceKey(name), ttlMs: recordTtlMs, owns }, (current) => {
      const edited = edit(current);
      if ('refused' in edited) return edited;
      return { next: { resource: edited.resource, createdAt: current.createdAt, updatedAt: this.#now() } };
    });
    if (outcome.status !== 'written') return outcome.status === 'conflict' ? { status: 'conflict' } : outcome;
    await this.#changed();
    return { status: 'written', record: outcome.next };
  }

  /**
   * Removes a resource; resolves whether there was one. One atomic delete, not a compare-and-set:
   * nothing is kept beside a resource that must lose exactly what the deleted record held (a
   * client's CORS origin index is), and a change racing the deletion replaces only the record it
   * read, so it cannot bring the resource back.
   */
  async remove(name: string): Promise<boolean> {
    const removed = await this.#store.delete(resourceKey(name));
    await this.#changed();
    return removed;
  }

  async #changed(): Promise<void> {
    const version = randomUUID();
    await this.#store.set(versionKey, version, recordTtlMs);
    await this.#load();
    this.#version = version;
  }

  async #poll(): Promise<void> {
    if (this.#polling) return;
    this.#polling = true;
    try {
      const version = await this.#store.get<string>(versionKey);
      if (version !== this.#version) {
        await this.#load();
        this.#version = version;
      }
    } catch (err) {
      // The set last read stays in service: a store outage removes no resource.
      this.#version = undefined;
      if (isStoreUnavailable(err)) this.#options.logger.debug({ err }, 'API resources: not read');
      else this.#options.logger.error({ err }, 'API resources: not taken into service');
    } finally {
      this.#polling = false;
    }
  }

  async #load(): Promise<void> {
    // By name: every gateway and thread then lists a token's audiences in the same order.
    const records = (await this.#store.familyRecords<StoredApiResourceRecord>(family, 'client')).sort((a, b) =>
      a.resource.name < b.resource.name ? -1 : 1,
    );
    if (this.#records.size === 0 && records.length === 0) return;
    const resources = records.map((r) => r.resource);
    // The workers first (names and scopes only: they never see a secret): a set too large for
    // them throws here and changes nothing anywhere, the last set read staying in service.
    this.#options.cell.write({ resources: resources.map((r) => ({ name: r.name, scopes: r.scopes })) });
    this.#records = new Map(records.map((r) => [r.resource.name, r]));
    this.#secrets = new Map(records.map((r) => [r.resource.name, decodeSecrets(r.resource.secrets)]));
    this.generation += 1;
    for (const ref of this.#followers) {
      const scopes = ref.deref();
      if (scopes === undefined) this.#followers.delete(ref);
      else scopes.useStoredResources(resources);
    }
  }
}

/**
 * `config` as a store-kept client is checked against (gateway/admin/client_document.ts): its API
 * resources and scopes with the store-kept ones added, so a client may be allowed their scopes
 * and name them as `audiences`.
 */
export function withStoredApiResources<C extends Pick<LoadedConfig, 'apiScopes' | 'apiResources'>>(
  config: C,
  registry: ApiResourceRegistry | undefined,
): C {
  const stored = registry?.resources() ?? [];
  if (stored.length === 0) return config;
  const known = new Set(config.apiScopes.map((s) => s.name));
  const scopes = [...new Set(stored.flatMap((r) => r.scopes))].filter((s) => !known.has(s)).map((name) => ({ name }));
  return { ...config, apiScopes: [...config.apiScopes, ...scopes], apiResources: [...config.apiResources, ...stored] };
}
