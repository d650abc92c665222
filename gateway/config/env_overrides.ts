/**
 * The `TESSERA_*` environment variables that override the config file (README, "The command
 * line"), applied to the raw document before validation.
 */
import type { ConfigProblem } from './config_error.js';
import { isPlainObject } from './plain_object.js';
import { configSchema } from './schema.js';

/** The environment variables that override the config file, in the order they are documented. */
export const envOverrideNames = ['TESSERA_PORT', 'TESSERA_HOST', 'TESSERA_REDIS_URL', 'TESSERA_WORKERS', 'TESSERA_LOG_LEVEL'] as const;
export type EnvOverrideName = (typeof envOverrideNames)[number];

export interface EnvOverrideResult {
  raw: unknown;
  problems: ConfigProblem[];
  applied: EnvOverrideName[];
}

const logLevels = configSchema.shape.logLevel.unwrap().options;

/**
 * Applies `TESSERA_*` overrides to the raw document before validation, so overridden values go
 * through the same schema. An empty variable counts as unset (what `VAR=` in a compose file means).
 * A variable with a bad value is reported under `env.NAME` and not applied.
 */
export function applyEnvOverrides(raw: unknown, env: NodeJS.ProcessEnv): EnvOverrideResult {
  const problems: ConfigProblem[] = [];
  const applied: EnvOverrideName[] = [];
  const read = (name: EnvOverrideName): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const reject = (name: EnvOverrideName, message: string): void => {
    problems.push({ path: `env.${name}`, message });
  };

  // Anything but an object is reported by the schema at (root); overrides have nowhere to go.
  if (!isPlainObject(raw)) return { raw, problems, applied };
  const document: Record<string, unknown> = { ...raw };
  const section = (key: string): Record<string, unknown> | undefined => {
    const value = document[key];
    if (value === undefined) return {};
    // A section of the wrong type is the schema's to report; do not paper over it.
    return isPlainObject(value) ? { ...value } : undefined;
  };

  const port = read('TESSERA_PORT');
  if (port !== undefined) {
    const listen = section('listen');
    if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) {
      reject('TESSERA_PORT', `must be an integer from 0 to 65535 (got ${JSON.stringify(port)})`);
    } else if (listen) {
      document.listen = { ...listen, port: Number(port) };
      applied.push('TESSERA_PORT');
    }
  }

  const host = read('TESSERA_HOST');
  if (host !== undefined) {
    const listen = section('listen');
    if (listen) {
      document.listen = { ...listen, host };
      applied.push('TESSERA_HOST');
    }
  }

  const redisUrl = read('TESSERA_REDIS_URL');
  if (redisUrl !== undefined) {
    if (!/^rediss?:\/\//.test(redisUrl) || !URL.canParse(redisUrl)) {
      // The URL may carry a password: never echo it.
      reject('TESSERA_REDIS_URL', 'must be a redis:// or rediss:// URL');
    } else {
      const store = section('store');
      // Keep tuning the file gave a Redis store (key prefix, timeout); everything else defaults.
      const kept: Record<string, unknown> = {};
      if (store && (store.type === 'redis' || store.type === 'redis-cluster')) {
        if (store.keyPrefix !== undefined) kept.keyPrefix = store.keyPrefix;
        if (store.commandTimeoutMs !== undefined) kept.commandTimeoutMs = store.commandTimeoutMs;
      }
      document.store = { type: 'redis', url: redisUrl, ...kept };
      applied.push('TESSERA_REDIS_URL');
    }
  }

  const workers = read('TESSERA_WORKERS');
  if (workers !== undefined) {
    const workersSection = section('workers');
    if (!/^\d{1,2}$/.test(workers) || Number(workers) < 1 || Number(workers) > 64) {
      reject('TESSERA_WORKERS', `must be an integer from 1 to 64 (got ${JSON.stringify(workers)})`);
    } else if (workersSection) {
      document.workers = { ...workersSection, threads: Number(workers) };
      applied.push('TESSERA_WORKERS');
    }
  }

  const logLevel = read('TESSERA_LOG_LEVEL');
  if (logLevel !== undefined) {
    if (!(logLevels as readonly string[]).includes(logLevel)) {
      reject('TESSERA_LOG_LEVEL', `must be one of ${logLevels.join(', ')} (got ${JSON.stringify(logLevel)})`);
    } else {
      document.logLevel = logLevel;
      applied.push('TESSERA_LOG_LEVEL');
    }
  }

  return { raw: document, problems, applied };
}
