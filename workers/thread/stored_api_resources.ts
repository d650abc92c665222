import type { ApiResource } from '../../core/validator_api.js';
import type { ScopeRules } from '../../core/rules/scope_rules.js';
import type { ApiResourceConfig } from '../../core/worker_config.js';
import type { ApiResourceCell } from '../../wire/api_resource_cell.js';

/**
 * A worker's view of the store-kept API resources (docs/configuration.md, `clientRegistry`),
 * taken from the gateway's shared-memory cell before each batch: one `Atomics.load` while nothing
 * changed. A change goes into the scope rules (scopes, audiences), the introspection endpoint's
 * resource scopes and the validators' `apiResources`, the config file's resources first.
 */
export class StoredApiResources {
  // Version 0, before the gateway's first write, is "no store-kept resource".
  private version = 0;
  /** Names and scopes, config file's and store-kept, as extension-grant validators see them. */
  current: readonly ApiResource[];

  constructor(
    private readonly cell: ApiResourceCell | undefined,
    private readonly configResources: readonly ApiResourceConfig[],
    private readonly scopes: ScopeRules,
    private readonly resourceScopes: Map<string, ReadonlySet<string>>,
  ) {
    this.current = frozen(configResources);
  }

  /** Takes a new set from the gateway, if there is one. */
  refresh(): void {
    const changed = this.cell?.readIfChanged(this.version) ?? null;
    if (changed === null) return;
    this.version = changed.version;
    const stored = changed.set.resources;
    this.scopes.useStoredResources(stored);
    this.resourceScopes.clear();
    const all = [...this.configResources, ...stored];
    for (const r of all) this.resourceScopes.set(r.name, new Set(r.scopes));
    this.current = frozen(all);
  }
}

function frozen(resources: readonly ApiResourceConfig[]): readonly ApiResource[] {
  return Object.freeze(resources.map((r) => Object.freeze({ name: r.name, scopes: Object.freeze([...r.scopes]) })));
}
