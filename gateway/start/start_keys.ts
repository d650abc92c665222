import { statSync } from 'node:fs';
import path from 'node:path';
import type { AuditEvents } from '../observability/events/audit_events.js';
import { openKeyEncryption } from '../keys/key_encryption.js';
import { KeyRing } from '../keys/key_ring.js';
import { openPageSecret, type PageSecretLoad } from '../keys/page_secret.js';
import type { GatewayState } from './gateway_state.js';

/** The signing keys in service and the pages' secret, as far as it is loaded. */
export interface StartedKeys {
  readonly keys: KeyRing;
  readonly pageSecretLoad: PageSecretLoad;
}

/**
 * Opens the signing keys (key files, watched, or store-kept keys; docs/operations.md "Signing
 * keys and rotation") and the pages' secret, both encrypted at rest when a key-encryption key is
 * set (docs/security.md, "Keys at rest").
 */
export async function startKeys(state: GatewayState, events: AuditEvents): Promise<StartedKeys> {
  const { options, logger, config } = state;
  const { store } = state.storage;
  const devKeyDir = options.devKeyDir ?? path.resolve('.tessera');
  const keyEncryption = await openKeyEncryption(config, options.env ?? process.env, logger);
  const keys = await KeyRing.open({
    config,
    store,
    logger,
    devKeyDir,
    keyEncryption,
    watch: options.watchKeys !== false,
    onSigningKeyChange: (kid) => {
      state.metrics?.countKeyRotation();
      events.emit({ name: 'KeyRotated', outcome: 'success', details: { kid } });
    },
  });
  state.keyRing = keys;
  // On Redis it may come later: the gateway starts without the store (docs/operations.md,
  // "Starting without the store").
  const pageSecretLoad = await openPageSecret(config, store, devKeyDir, { logger, encryption: keyEncryption });
  state.pageSecretLoad = pageSecretLoad;
  state.pageSecret = pageSecretLoad.secret;
  return { keys, pageSecretLoad };
}

/**
 * When the signing key began, for its age (`tessera_signing_key_age_seconds`): the activation of
 * a store-kept key, or the key file's modification time (read at each scrape: a reload may have
 * replaced it); unknown for a key with neither.
 */
export function signingKeyCreatedAt(keys: KeyRing, file: string | undefined): () => number | undefined {
  return () => {
    const since = keys.signingSince;
    if (since > 0) return since;
    if (file === undefined) return undefined;
    try {
      return statSync(file).mtimeMs;
    } catch {
      return undefined;
    }
  };
}
