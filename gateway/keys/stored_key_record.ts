/**
 * How a store-kept signing key is written to the store (docs/storage.md, "Records"): its schedule
 * in the clear, its private JWK sealed under the key-encryption key (gateway/keys/key_encryption.ts)
 * when one is set. A record written before encryption, with a plaintext `jwk`, still loads.
 */
import type { JWK } from 'jose';
import type { KeyEncryption } from './key_encryption.js';
import type { StoredSigningKey } from './stored_key.js';

type Schedule = Omit<StoredSigningKey, 'jwk'>;
/** As in the store: `sealedJwk` (encrypted), or `jwk` (plaintext: no KEK, or an older version). */
export type StoredKeyRecord = Schedule &
  ({ readonly sealedJwk: string; readonly jwk?: never } | { readonly jwk: JWK; readonly sealedJwk?: never });

/** The AES-GCM additional data: a sealed JWK opens only in the record of its own kid. */
function purposeOf(kid: string): string {
  return `signing key ${kid}`;
}

export function encodeStoredKey(key: StoredSigningKey, encryption: KeyEncryption): StoredKeyRecord {
  const { jwk, ...schedule } = key;
  if (!encryption.enabled) return { ...schedule, jwk };
  return { ...schedule, sealedJwk: encryption.seal(JSON.stringify(jwk), purposeOf(key.kid)) };
}

/** @throws {ConfigError} when the record is sealed under a KEK that is not given. */
export function decodeStoredKey(record: StoredKeyRecord, encryption: KeyEncryption): StoredSigningKey {
  const { sealedJwk, jwk, ...schedule } = record;
  if (sealedJwk === undefined) return { ...schedule, jwk: jwk as JWK };
  const plain = encryption.open(sealedJwk, purposeOf(record.kid), `signing key ${record.kid}`);
  return { ...schedule, jwk: JSON.parse(plain) as JWK };
}

/** Whether the record should be written again under the KEK that encrypts now. */
export function needsResealing(record: StoredKeyRecord, encryption: KeyEncryption): boolean {
  return encryption.enabled && (record.sealedJwk === undefined || encryption.needsResealing(record.sealedJwk));
}
