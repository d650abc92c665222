import type { Piscina } from 'piscina';
import type { Logger } from 'pino';
import { builtInGrantTypes } from '../../core/grant_types.js';
import type { ConfigError } from '../config/config_error.js';
import { loadValidatorModules, type ValidatorModule } from './validator_loader.js';

/** Where validator modules come from: the config's `validatorsDir` and the builder's extra modules. */
export interface ValidatorSources {
  readonly dir?: string | undefined;
  readonly modules: readonly string[];
}

export interface ValidatorReloadDeps {
  readonly sources: ValidatorSources;
  /** Grant types no validator may take: the built-ins and the grant modules'. */
  readonly reservedGrantTypes: readonly string[];
  /** Grant types of the embedding code's grant modules, served beside the validators'. */
  readonly internalGrantTypes: readonly string[];
  /** Starts a booted pool serving these validators. */
  readonly startPool: (validators: readonly ValidatorModule[]) => Promise<Piscina>;
  /** Puts the new pool in service; the old one finishes what it has. */
  readonly replacePool: (pool: Piscina) => Promise<void>;
  /** Told the grant types served after a reload took effect. */
  readonly onReloaded: (grantTypes: ReadonlySet<string>, change: ValidatorChange) => void;
  /** Told when a reload was refused and the previous validators stay (the audit event). */
  readonly onRefused?: (reason: string) => void;
  readonly logger: Logger;
}

/**
 * The validators in service and their hot reload (validators/README.md, "Hot reload"): a new
 * set is checked in full, then served by a fresh pool while the old pool finishes what it has.
 * A broken file leaves the previous set in service.
 */
export class ValidatorReload {
  private validators: readonly ValidatorModule[];
  private served: ReadonlySet<string>;
  private waiters: ((applied: boolean) => void)[] = [];

  constructor(
    private readonly deps: ValidatorReloadDeps,
    initial: readonly ValidatorModule[],
  ) {
    this.validators = initial;
    this.served = grantTypesOf(deps.internalGrantTypes, initial);
  }

  /** The validator modules served right now. */
  get modules(): readonly ValidatorModule[] {
    return this.validators;
  }

  /** The grant types served right now. */
  get grantTypes(): ReadonlySet<string> {
    return this.served;
  }

  /** Resolves after the next reload attempt: `true` when it took effect. */
  next(): Promise<boolean> {
    return new Promise<boolean>((resolve) => this.waiters.push(resolve));
  }

  /** Answers every waiter with `false`, at stop. */
  cancel(): void {
    this.settle(false);
  }

  /** Loads the modules again and, when something changed, serves them from a new pool. */
  readonly reload = async (): Promise<void> => {
    const { deps } = this;
    let next: ValidatorModule[];
    try {
      next = await loadValidatorModules(deps.sources, deps.reservedGrantTypes);
    } catch (err) {
      const problems = (err as Partial<ConfigError>).problems ?? [{ path: deps.sources.dir ?? '', message: String(err) }];
      deps.logger.error({ problems }, 'validator reload refused; the previous validators stay in service');
      deps.onRefused?.('invalid_validator');
      this.settle(false);
      return;
    }
    const change = describeChange(this.validators, next);
    if (change === undefined) {
      this.settle(false);
      return;
    }
    try {
      await deps.replacePool(await deps.startPool(next));
    } catch (err) {
      deps.logger.error({ err }, 'validator reload could not start workers; the previous validators stay in service');
      deps.onRefused?.('workers_did_not_start');
      this.settle(false);
      return;
    }
    this.validators = next;
    this.served = grantTypesOf(deps.internalGrantTypes, next);
    deps.onReloaded(this.served, change);
    deps.logger.info(change, 'validators reloaded');
    this.settle(true);
  };

  private settle(applied: boolean): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve(applied);
  }
}

function grantTypesOf(internal: readonly string[], validators: readonly ValidatorModule[]): ReadonlySet<string> {
  const extensionGrants = validators.filter((v) => v.kind === 'extension_grant').map((v) => v.grantType);
  return new Set([...builtInGrantTypes, ...internal, ...extensionGrants]);
}

/** What a reload changes, for its log line; `undefined` when nothing did. */
/** The grant types a reload added, removed and changed. */
export interface ValidatorChange {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  readonly changed: readonly string[];
}

function describeChange(before: readonly ValidatorModule[], after: readonly ValidatorModule[]): ValidatorChange | undefined {
  const old = new Map(before.map((v) => [v.file, v]));
  const now = new Map(after.map((v) => [v.file, v]));
  const added = after.filter((v) => !old.has(v.file)).map((v) => v.grantType);
  const removed = before.filter((v) => !now.has(v.file)).map((v) => v.grantType);
  const changed = after.filter((v) => old.has(v.file) && old.get(v.file)?.version !== v.version).map((v) => v.grantType);
  if (added.length + removed.length + changed.length === 0) return undefined;
  return { added, removed, changed };
}
