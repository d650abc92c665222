/**
 * The `TESSERA_*` environment variables that override the config file (README, "The command
 * line"), applied to the raw document before validation.
 */
import type { ConfigProblem } from './config_error.js';
import { isPlainObject } from './plain_object.js';
import { configSchema } from './schema.js';

/** The environment variables that override the config file, in the order they are documented. */
export const envOverrideNames = [
  'TESSERA_PORT',
  'TESSERA_HOST',
  'TESSERA_REDIS_URL',
  'TESSERA_REDIS_SENTINELS',
  'TESSERA_REDIS_SENTINEL_NAME',
  'TESSERA_WORKERS',
  'TESSERA_LOG_LEVEL',
] as const;
export type EnvOverrideName = (typeof envOverrideNames)[number];

export interface EnvOverrideResult {
  raw: unknown;
  problems: ConfigProblem[];
  applied: EnvOverrideName[];
}

const logLevels = configSchema.shape.logLevel.unwrap().options;
/** As the schema's Sentinel address, so that a bad entry is reported under the variable's name. */
const sentinelAddress = /^(?:\[[0-9A-Fa-f:.]+\]|[^\s:[\]]+):\d{1,5}$/;

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

  /** A whole number from `min` to `max` (written with no more digits than `max` has) into `key.field`. */
  const overrideInteger = (name: EnvOverrideName, key: string, field: string, min: number, max: number): void => {
    const text = read(name);
    if (text === undefined) return;
    const target = section(key);
    const digits = new RegExp(`^\\d{1,${String(max).length}}$`);
    if (!digits.test(text) || Number(text) < min || Number(text) > max) {
      reject(name, `must be an integer from ${min} to ${max} (got ${JSON.stringify(text)})`);
    } else if (target) {
      document[key] = { ...target, [field]: Number(text) };
      applied.push(name);
    }
  };

  overrideInteger('TESSERA_PORT', 'listen', 'port', 0, 65535);

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

  // Sentinel (docs/operations.md, "Redis Sentinel"): the list switches the store; the group
  // name comes with it, or from a redis-sentinel store in the file.
  const sentinels = read('TESSERA_REDIS_SENTINELS');
  const sentinelName = read('TESSERA_REDIS_SENTINEL_NAME');
  if (sentinels !== undefined || sentinelName !== undefined) {
    const store = section('store');
    const fileSentinel = store !== undefined && store.type === 'redis-sentinel';
    const addresses = sentinels?.split(',').map((address) => address.trim());
    if (sentinels !== undefined && redisUrl !== undefined) {
      reject('TESSERA_REDIS_SENTINELS', 'cannot be combined with TESSERA_REDIS_URL: set one store');
    } else if (addresses !== undefined && !addresses.every((address) => sentinelAddress.test(address))) {
      reject('TESSERA_REDIS_SENTINELS', 'must be a comma-separated list of host:port (e.g. "s1:26379,s2:26379")');
    } else if (sentinels === undefined && !fileSentinel) {
      reject('TESSERA_REDIS_SENTINEL_NAME', 'needs TESSERA_REDIS_SENTINELS or a "redis-sentinel" store in the file');
    } else if (sentinels !== undefined && sentinelName === undefined && !fileSentinel) {
      reject(
        'TESSERA_REDIS_SENTINELS',
        'needs TESSERA_REDIS_SENTINEL_NAME (the master group) unless the file has a "redis-sentinel" store',
      );
    } else if (store) {
      // Keep what the file gave a Sentinel store (passwords, TLS), and a Redis store's tuning.
      const kept: Record<string, unknown> = fileSentinel ? { ...store } : {};
      if (!fileSentinel && (store.type === 'redis' || store.type === 'redis-cluster')) {
        if (store.keyPrefix !== undefined) kept.keyPrefix = store.keyPrefix;
        if (store.commandTimeoutMs !== undefined) kept.commandTimeoutMs = store.commandTimeoutMs;
      }
      document.store = {
        ...kept,
        type: 'redis-sentinel',
        ...(addresses === undefined ? {} : { sentinels: addresses }),
        ...(sentinelName === undefined ? {} : { name: sentinelName }),
      };
      if (sentinels !== undefined) applied.push('TESSERA_REDIS_SENTINELS');
      if (sentinelName !== undefined) applied.push('TESSERA_REDIS_SENTINEL_NAME');
    }
  }

  overrideInteger('TESSERA_WORKERS', 'workers', 'threads', 1, 64);

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
