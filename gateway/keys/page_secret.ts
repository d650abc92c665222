/**
 * The secret behind the pages' session cookie and CSRF tokens (gateway/pages/session.ts): its own
 * secret, not derived from a signing key, so a key rotation leaves sign-ins and open forms alone
 * (docs/security.md, "Sessions and CSRF"). Generated once and shared by every gateway: in the
 * store on Redis, in a file under `.tessera/` on the memory store (one process anyway).
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Logger } from 'pino';
import { isStoreUnavailable, type Store } from '../../core/store/store.js';
import type { LoadedConfig } from '../config/load.js';
import { readOrMakeOnce } from './shared_file.js';
import { KeyEncryption } from './key_encryption.js';

// Renewed (the same value) at every start, so it lasts as long as gateways start now and then.
const storedTtlMs = 10 * 365 * 86_400_000;

// The AES-GCM additional data of the sealed record (gateway/keys/key_encryption.ts).
const purpose = 'page secret';

/**
 * The page secret. On Redis it is sealed under the key-encryption key when one is set
 * (docs/security.md, "Keys at rest"); a plaintext one (an upgrade, or a KEK set since) or one under
 * an older KEK is written back sealed under the current one.
 *
 * @throws {ConfigError} naming the KEK's source when the stored secret is sealed under a KEK not given.
 */
export async function loadPageSecret(
  config: Pick<LoadedConfig, 'store'>,
  store: Store,
  devKeyDir: string,
  encryption: KeyEncryption = KeyEncryption.none,
): Promise<string> {
  const candidate = randomBytes(32).toString('base64url');
  if (config.store.type !== 'memory') {
    const key = { kind: 'key', id: 'page-secret' } as const;
    const stored = await store.putIfAbsent<string>(key, encryption.seal(candidate, purpose), storedTtlMs);
    const secret = encryption.open(stored, purpose, 'the page secret');
    await store.set(key, encryption.needsResealing(stored) ? encryption.seal(secret, purpose) : stored, storedTtlMs);
    return secret;
  }
  const file = path.join(devKeyDir, 'page-secret');
  return readOrMakeOnce(
    file,
    async () => ({ value: candidate, text: `${candidate}\n` }),
    (text) => {
      const secret = text.trim();
      // Shorter: a file still being written, or one somebody edited.
      if (secret.length < 32) throw new Error(`${file}: the page secret is too short; delete the file to generate a new one`);
      return secret;
    },
  );
}

/** The page secret as far as it is known: loaded, or still awaited from the store. */
export interface PageSecretLoad {
  /** The secret when it was loaded at start; `undefined` while the store has not answered. */
  readonly secret: string | undefined;
  /** Resolves with the secret once loaded (at once when it was at start). */
  readonly loaded: Promise<string>;
  /** Stops trying (the gateway stops). */
  stop(): void;
}

/**
 * Loads the page secret; on Redis, when the store cannot answer at start, the gateway starts
 * without it and this keeps trying every `retryMs` until the store answers (docs/operations.md,
 * "Starting without the store"): a Redis restart must not keep gateways from starting. Any other
 * failure (an unreadable `.tessera/page-secret`) fails the start as before.
 */
export async function openPageSecret(
  config: Pick<LoadedConfig, 'store'>,
  store: Store,
  devKeyDir: string,
  options: { readonly logger: Logger; readonly retryMs?: number; readonly encryption?: KeyEncryption },
): Promise<PageSecretLoad> {
  const encryption = options.encryption ?? KeyEncryption.none;
  try {
    const secret = await loadPageSecret(config, store, devKeyDir, encryption);
    return { secret, loaded: Promise.resolve(secret), stop: () => {} };
  } catch (err) {
    if (!isStoreUnavailable(err)) throw err;
  }
  options.logger.warn(
    'the store does not answer: starting without the page secret; the login, consent, device and sign-out pages and DPoP nonces answer 503 until it does',
  );
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const loaded = new Promise<string>((resolve) => {
    const attempt = (): void => {
      timer = undefined;
      if (stopped) return;
      loadPageSecret(config, store, devKeyDir, encryption).then(resolve, (err: unknown) => {
        if (stopped) return;
        // The store answered but the secret cannot be opened (a KEK that is not the one it was
        // sealed under): said at every try, since the pages stay closed until it is fixed.
        if (!isStoreUnavailable(err)) options.logger.error({ err }, 'the page secret in the store cannot be read');
        timer = setTimeout(attempt, options.retryMs ?? 1000);
        timer.unref();
      });
    };
    timer = setTimeout(attempt, options.retryMs ?? 1000);
    timer.unref();
  });
  return {
    secret: undefined,
    loaded,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
