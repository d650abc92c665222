import type { Piscina } from 'piscina';
import type { Logger } from 'pino';
import { ConfigError, formatProblems, type ConfigProblem } from '../config/config_error.js';
import type { LoadedConfig } from '../config/load.js';
import { planReload } from '../config/reload_plan.js';

/** What a config reload did (`RunningGateway.reload`). */
export interface ReloadResult {
  /** The new config is in service (perhaps with some fields waiting for a restart). */
  readonly applied: boolean;
  /** Why nothing was applied: the same problems `tessera start` would report. */
  readonly problems: readonly ConfigProblem[];
  /** Changed fields that only a restart applies (dotted paths); the rest was applied. */
  readonly needsRestart: readonly string[];
}

/**
 * The running gateway as a config reload sees it: the config in service, and the steps that
 * start, check and swap in what a new config changes. {@link reloadConfig} runs them in order and
 * undoes what it started when a later step refuses.
 */
export interface ReloadableGateway {
  readonly logger: Logger;
  /** The config in service. */
  current(): LoadedConfig;
  /** Why no reload can run now (the gateway is stopping, it has no config file), or `undefined`. */
  unavailable(): string | undefined;
  /** Reads and validates the config again; throws a `ConfigError` naming its problems. */
  read(): Promise<LoadedConfig>;
  /** A worker pool on `config` (the workers read clients, users and scopes from their boot data). */
  startPool(config: LoadedConfig): Promise<Piscina>;
  /** Reads the TLS files of `config` again when the listener serves TLS; throws when they cannot be used. */
  reloadTls(config: LoadedConfig): Promise<void>;
  /** Builds the routes of `config` and swaps them in; `false` when it registers other routes. */
  replaceRoutes(config: LoadedConfig): boolean;
  /** Puts `config` and `pool` in service; resolves once the replaced pool has drained. */
  commit(config: LoadedConfig, pool: Piscina): Promise<void>;
}

/**
 * A config reload (SIGHUP, docs/operations.md "Reload"): checked in full, then applied at once, or
 * not at all. The store, and with it every session and token, stays; a new pool takes over as on
 * a validator reload.
 */
export async function reloadConfig(gateway: ReloadableGateway): Promise<ReloadResult> {
  const { logger } = gateway;
  const refuse = (problems: readonly ConfigProblem[]): ReloadResult => {
    logger.error({ problems }, `config reload refused; the running config stays in service:\n${formatProblems(problems)}`);
    return { applied: false, problems, needsRestart: [] };
  };
  const unavailable = gateway.unavailable();
  if (unavailable !== undefined) return refuse([{ path: '(root)', message: unavailable }]);
  let read: LoadedConfig;
  try {
    read = await gateway.read();
  } catch (err) {
    if (err instanceof ConfigError) return refuse(err.problems);
    return refuse([{ path: '(root)', message: String(err) }]);
  }
  const plan = planReload(gateway.current(), read);
  const next = plan.config;
  let pool: Piscina;
  try {
    pool = await gateway.startPool(next);
  } catch (err) {
    return refuse([{ path: '(root)', message: `the worker threads did not start with the new config (${(err as Error).message})` }]);
  }
  // The certificate after the pool: a pool that does not start leaves the TLS files as they were.
  try {
    await gateway.reloadTls(next);
  } catch (err) {
    await pool.destroy();
    return refuse([{ path: 'tls', message: (err as Error).message }]);
  }
  if (!gateway.replaceRoutes(next)) {
    await pool.destroy();
    return refuse([{ path: '(root)', message: 'the new config registers other routes: it needs a restart' }]);
  }
  const drained = gateway.commit(next, pool);
  if (plan.needsRestart.length > 0) {
    logger.warn({ needsRestart: plan.needsRestart }, `config reloaded; changes to ${plan.needsRestart.join(', ')} need a restart`);
  } else logger.info({ clients: next.clients.length, users: next.users.length }, 'config reloaded');
  await drained;
  return { applied: true, problems: [], needsRestart: plan.needsRestart };
}
