/**
 * What a config reload can apply to a running gateway (docs/operations.md, "Reload"): everything
 * but the sections below, which a running process cannot change. Those keep their running values
 * and are reported as needing a restart; the rest of the new file applies.
 */
import type { LoadedConfig } from './load.js';

/**
 * Sections fixed for the life of the process: the listening sockets (public and management), the
 * number of processes (forked once, at start), the store connection, the pool's size and queues, the issuer every token and the pages' cookies
 * carry, the watched validators folder, the client registry and the admin API, the event sinks and the log format.
 */
const fixedSections = [
  'issuer',
  'listen',
  'store',
  'processes',
  'workers',
  'validatorsDir',
  'management',
  // The client registry's cache and poller and the admin API on the management listener.
  'clientRegistry',
  'admin',
  'events',
  'tracing',
  'logFormat',
] as const;

export interface ReloadPlan {
  /** The config to serve: the new file, with the fixed sections as they run now. */
  readonly config: LoadedConfig;
  /** Dotted paths changed in the file that take effect only after a restart. */
  readonly needsRestart: readonly string[];
}

export function planReload(running: LoadedConfig, next: LoadedConfig): ReloadPlan {
  const needsRestart: string[] = [];
  const kept: Record<string, unknown> = {};
  for (const section of fixedSections) {
    needsRestart.push(...changedPaths(section, running[section], next[section]));
    kept[section] = running[section];
  }
  // Of `signing`, only the list of key files applies, through the key ring's own reload
  // (gateway/keys/key_ring.ts, given this config); the algorithm, the rotation schedule, the
  // JWKS max-age, and a switch between key files and store-kept keys need a restart.
  const switching = (running.signing.keys.length === 0) !== (next.signing.keys.length === 0);
  needsRestart.push(...changedPaths('signing', { ...running.signing, keys: [] }, { ...next.signing, keys: [] }));
  if (switching) needsRestart.push('signing.keys');
  kept.signing = { ...running.signing, keys: switching ? running.signing.keys : next.signing.keys };
  const config: Record<string, unknown> = { ...next, ...kept };
  // TLS can change its files live (they are re-read), but not be switched on or off.
  if ((running.tls === undefined) !== (next.tls === undefined)) {
    needsRestart.push('tls');
    if (running.tls === undefined) delete config.tls;
    else config.tls = running.tls;
  }
  return { config: Object.freeze(config) as LoadedConfig, needsRestart };
}

/** The leaves that differ between two plain JSON values, as dotted paths. */
function changedPaths(path: string, before: unknown, after: unknown): string[] {
  if (Object.is(before, after)) return [];
  if (isRecord(before) && isRecord(after) && !Array.isArray(before) && !Array.isArray(after)) {
    const names = new Set([...Object.keys(before), ...Object.keys(after)]);
    return [...names].flatMap((name) => changedPaths(`${path}.${name}`, before[name], after[name]));
  }
  return JSON.stringify(before) === JSON.stringify(after) ? [] : [path];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
