/** What `tessera keys list` and `tessera keys rotate` share: the config, and the store-kept keys it names. */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createStore } from '../../core/store/create_store.js';
import type { Store } from '../../core/store/store.js';
import type { LoadedConfig } from '../config/load.js';
import { rotationPolicyOf } from '../config/signing_rotation.js';
import { firstStoredKey } from '../keys/key_ring.js';
import { StoreKeySource } from '../keys/store_key_source.js';
import { loadKeyEncryption } from '../keys/key_encryption.js';
import { createTessera } from '../start/service_builder.js';
import { UsageError, type CliIo } from './command.js';

/** The config a `tessera keys` command's `--config FILE` (required) names, loaded as `start` loads it. */
export async function loadKeysConfig(args: string[], io: CliIo): Promise<LoadedConfig> {
  const { values } = parseArgs({ args, options: { config: { type: 'string' } }, strict: true, allowPositionals: false });
  if (values.config === undefined) throw new UsageError('--config FILE is required');
  // Through the builder, as `start` reads it: grant types of validators count as known.
  return createTessera(values.config).withEnv(io.env).loadConfig();
}

/**
 * Runs `use` on the store-kept keys of a config on Redis, then closes the store connection,
 * whatever `use` did. On the memory store the keys live inside the running gateway, out of reach.
 */
export async function withStoredKeys<T>(
  config: LoadedConfig,
  env: NodeJS.ProcessEnv,
  use: (source: StoreKeySource) => Promise<T>,
): Promise<T> {
  const { source, close } = await openStoredKeys(config, env);
  try {
    return await use(source);
  } finally {
    await close();
  }
}

/** The store-kept keys, opened for one command; `close` releases the connection. */
async function openStoredKeys(
  config: LoadedConfig,
  env: NodeJS.ProcessEnv,
): Promise<{ source: StoreKeySource; close: () => Promise<void> }> {
  if (config.store.type === 'memory') {
    throw new Error(
      'the memory store lives inside the running gateway, where its keys rotate on signing.rotation; use a Redis store to manage keys from the command line',
    );
  }
  // The gateways' key-encryption key: the keys are read, and a rotation's new key written, sealed.
  const encryption = await loadKeyEncryption(config, env);
  const store: Store = createStore(config.store);
  // The development key directory is only read on the memory store.
  const devKeyDir = path.resolve('.tessera');
  const source = new StoreKeySource(
    store,
    config.signing.algorithm,
    rotationPolicyOf(config),
    () => firstStoredKey(config, store, devKeyDir),
    undefined,
    encryption,
  );
  return { source, close: () => store.close() };
}

/** An epoch-ms time as an ISO 8601 UTC string to the second; `-` for none. */
export function formatTime(ms: number | null): string {
  return ms === null ? '-' : new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
