/**
 * Encryption at rest of what the store keeps secret for the gateways: the store-kept signing keys'
 * private JWKs and the pages' secret (docs/security.md, "Keys at rest"). AES-256-GCM under a
 * key-encryption key (KEK) given by `TESSERA_KEY_ENCRYPTION_KEY` or `keyEncryption.keyFile`: one
 * or more keys of 32 random bytes, base64; the first encrypts, all decrypt, so a KEK is rotated
 * by putting a new one first and dropping the old one once everything is re-encrypted. Each sealed
 * value names the KEK it is under. Values written before encryption (plaintext) still load, and
 * are re-encrypted by their owner (gateway/keys/page_secret.ts, store_key_source.ts).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { ConfigError } from '../config/config_error.js';
import { describeFsError } from '../config/fs_error.js';
import type { LoadedConfig } from '../config/load.js';

export const keyEncryptionEnvName = 'TESSERA_KEY_ENCRYPTION_KEY';
/** The prefix of a sealed value; a plaintext page secret (base64url) or JWK never starts with it. */
const sealedPrefix = 'tessera-kek.v1.';
const keyBytes = 32;
const ivBytes = 12;
const tagBytes = 16;

interface Kek {
  readonly id: string;
  readonly key: Buffer;
}

export class KeyEncryption {
  /** No KEK: values are written in plaintext (development; a warning at start). */
  static readonly none = new KeyEncryption([], 'keyEncryption');

  constructor(
    private readonly keks: readonly Kek[],
    /** Where the keys came from, as a config path (`keyEncryption.keyFile`, `env.TESSERA_…`): errors name it. */
    readonly source: string,
  ) {}

  /** Builds the KEKs from their base64 texts; the first encrypts. */
  static fromTexts(texts: readonly string[], source: string): KeyEncryption {
    const keks = texts.map((text, i) => {
      const key = Buffer.from(text, text.includes('-') || text.includes('_') ? 'base64url' : 'base64');
      if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text) || key.length !== keyBytes) {
        // Never the text itself: it is a secret, or a typo of one.
        throw new ConfigError([
          { path: source, message: `key ${i + 1} is not ${keyBytes} bytes in base64 (make one with: openssl rand -base64 32)` },
        ]);
      }
      return { id: kekId(key), key };
    });
    return new KeyEncryption(keks, source);
  }

  get enabled(): boolean {
    return this.keks.length > 0;
  }

  /** The ids of the KEKs, the encrypting one first (never the keys). */
  get ids(): readonly string[] {
    return this.keks.map((k) => k.id);
  }

  /**
   * `plaintext` sealed under the first KEK, bound to `purpose` (AES-GCM additional data), so a
   * sealed value copied to another record does not open there.
   */
  seal(plaintext: string, purpose: string): string {
    const kek = this.keks[0];
    if (kek === undefined) return plaintext;
    const iv = randomBytes(ivBytes);
    const cipher = createCipheriv('aes-256-gcm', kek.key, iv);
    cipher.setAAD(Buffer.from(`tessera ${purpose}`));
    const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${sealedPrefix}${kek.id}.${iv.toString('base64url')}.${sealed.toString('base64url')}`;
  }

  /**
   * The plaintext of a value {@link seal} made, or `value` itself when it was stored in plaintext.
   *
   * @throws {ConfigError} naming the KEK's source when no KEK here opens it.
   */
  open(value: string, purpose: string, what: string): string {
    if (!value.startsWith(sealedPrefix)) return value;
    const [id, ivText, sealedText] = value.slice(sealedPrefix.length).split('.');
    const kek = this.keks.find((k) => k.id === id);
    if (kek === undefined || ivText === undefined || sealedText === undefined) {
      const message = this.enabled
        ? `${what} in the store is encrypted under key-encryption key ${id}, which is not among this gateway's (${this.ids.join(', ')}); give the same keys to every gateway`
        : `${what} in the store is encrypted under key-encryption key ${id}, and no key is set: set ${keyEncryptionEnvName} or keyEncryption.keyFile`;
      throw new ConfigError([{ path: this.source, message }]);
    }
    try {
      const sealed = Buffer.from(sealedText, 'base64url');
      const decipher = createDecipheriv('aes-256-gcm', kek.key, Buffer.from(ivText, 'base64url'));
      decipher.setAAD(Buffer.from(`tessera ${purpose}`));
      decipher.setAuthTag(sealed.subarray(sealed.length - tagBytes));
      return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - tagBytes)), decipher.final()]).toString('utf8');
    } catch {
      throw new ConfigError([
        { path: this.source, message: `${what} in the store does not decrypt under key-encryption key ${id}: it was altered` },
      ]);
    }
  }

  /** Whether `value` should be written again: plaintext while a KEK is set, or under a KEK that no longer encrypts. */
  needsResealing(value: string): boolean {
    const first = this.keks[0];
    if (first === undefined) return false;
    return !value.startsWith(`${sealedPrefix}${first.id}.`);
  }
}

/** Whether a stored value is sealed (not plaintext). */
export function isSealed(value: string): boolean {
  return value.startsWith(sealedPrefix);
}

/**
 * The KEKs of a config: `TESSERA_KEY_ENCRYPTION_KEY` (keys separated by commas or whitespace)
 * when set, else `keyEncryption.keyFile` (one key a line, `#` comments), else none.
 *
 * @throws {ConfigError} naming the variable or field when a key is malformed or the file unreadable.
 */
export async function loadKeyEncryption(config: Pick<LoadedConfig, 'keyEncryption'>, env: NodeJS.ProcessEnv): Promise<KeyEncryption> {
  const fromEnv = env[keyEncryptionEnvName]?.trim();
  if (fromEnv !== undefined && fromEnv !== '') return KeyEncryption.fromTexts(fromEnv.split(/[\s,]+/), `env.${keyEncryptionEnvName}`);
  const file = config.keyEncryption.keyFile;
  if (file === undefined) return KeyEncryption.none;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new ConfigError([{ path: 'keyEncryption.keyFile', message: `cannot read ${file} (${describeFsError(error)})` }]);
  }
  const keys = text
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter((line) => line.length > 0);
  if (keys.length === 0) throw new ConfigError([{ path: 'keyEncryption.keyFile', message: `${file} holds no key` }]);
  return KeyEncryption.fromTexts(keys, 'keyEncryption.keyFile');
}

/**
 * {@link loadKeyEncryption}, and the start-up warning when a Redis store would hold the page secret
 * and signing keys in plaintext.
 */
export async function openKeyEncryption(
  config: Pick<LoadedConfig, 'keyEncryption' | 'store'>,
  env: NodeJS.ProcessEnv,
  logger: Logger,
): Promise<KeyEncryption> {
  const encryption = await loadKeyEncryption(config, env);
  if (!encryption.enabled && config.store.type !== 'memory') {
    logger.warn(
      `no key-encryption key (${keyEncryptionEnvName} or keyEncryption.keyFile): the page secret and store-kept signing keys are kept in the store in plaintext; see docs/security.md "Keys at rest"`,
    );
  } else if (encryption.enabled) {
    logger.info({ kek: encryption.ids[0], decrypts: encryption.ids }, 'key-encryption key loaded');
  }
  return encryption;
}

/** A KEK's id: a hash of the key, so records name the KEK they are under without revealing it. */
function kekId(key: Buffer): string {
  return createHash('sha256').update('tessera kek id\u0000').update(key).digest('base64url').slice(0, 11);
}
