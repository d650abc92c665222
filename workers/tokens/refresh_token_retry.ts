/**
 * The retry record of a refresh-token rotation (docs/storage.md, "Refresh grace window"): what a
 * client that presents its old refresh token again, because it never got the answer to the
 * rotation (a timeout, a write Redis applied late, a dropped connection), needs to continue with
 * the successor instead of having its family revoked as reuse (RFC 9700 §4.14.2).
 *
 * The record holds the successor handle sealed with AES-256-GCM under a key derived by HKDF
 * (RFC 5869) from the presented handle. The store only ever sees SHA-256 of a handle, from which
 * the key cannot be derived, so a store dump opens no record: only whoever holds the old token can,
 * and only for as long as the record lives (the client's grace window, its TTL).
 */
import { createCipheriv, createDecipheriv, createHmac } from 'node:crypto';
import { pooledRandomBytes } from '../crypto/random_pool.js';
import type { CompanionRecord, StoreKey } from '../store/store.js';
import type { FamilyHandle } from './refresh_token_handle.js';

/** What the store keeps: the sealed successor, nothing usable without the old handle. */
export interface RetryRecord {
  readonly v: 1;
  /** IV (12 bytes) ‖ AES-256-GCM ciphertext ‖ tag (16 bytes). */
  readonly sealed: Uint8Array;
}

const ivBytes = 12;
const tagBytes = 16;
const hkdfInfo = Buffer.from('tessera refresh-token retry v1');
// RFC 5869 §2.2: an absent salt is HashLen zero bytes.
const zeroSalt = Buffer.alloc(32);
const firstBlock = Buffer.of(1);

/** Where the retry record of `retired` lives: beside it, under the same store id and family. */
export function retryKey(retired: FamilyHandle): StoreKey {
  return { kind: 'retry', id: retired.key.id, family: retired.family };
}

/**
 * The record a rotation writes in its own atomic step: `successor` sealed under a key only the
 * holder of `retired` can derive, bound to the client (a stranger's retry fails to open it), kept
 * for `graceMs`.
 */
export function sealedRetryRecord(
  retired: FamilyHandle,
  successor: FamilyHandle,
  clientId: string,
  graceMs: number,
): CompanionRecord<RetryRecord> {
  const iv = pooledRandomBytes(ivBytes);
  const cipher = createCipheriv('aes-256-gcm', retryKeyMaterial(retired), iv);
  cipher.setAAD(Buffer.from(clientId, 'utf8'));
  const body = Buffer.concat([cipher.update(successor.handle, 'utf8'), cipher.final()]);
  return { key: retryKey(retired), value: { v: 1, sealed: Buffer.concat([iv, body, cipher.getAuthTag()]) }, ttlMs: graceMs };
}

/** The successor handle, or `undefined` when the record does not open with this handle and client. */
export function openRetryRecord(retired: FamilyHandle, record: RetryRecord, clientId: string): string | undefined {
  const sealed = Buffer.from(record.sealed);
  if (record.v !== 1 || sealed.length <= ivBytes + tagBytes) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', retryKeyMaterial(retired), sealed.subarray(0, ivBytes));
    decipher.setAAD(Buffer.from(clientId, 'utf8'));
    decipher.setAuthTag(sealed.subarray(sealed.length - tagBytes));
    return Buffer.concat([decipher.update(sealed.subarray(ivBytes, sealed.length - tagBytes)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

/**
 * HKDF-SHA-256 (RFC 5869) with the whole handle as input keying material (256 bits of secret), no
 * salt and 32 bytes of output, which is one block: PRK = HMAC(zero salt, IKM) (§2.2), OKM = T(1) =
 * HMAC(PRK, info ‖ 0x01) (§2.3). Written as its two HMACs because `hkdfSync` costs twice as much
 * (11.6 against 5.4 µs, bench/README.md): it makes a KeyObject of the input on every call. The
 * bytes are `hkdfSync`'s; a test checks it.
 */
function retryKeyMaterial(retired: FamilyHandle): Buffer {
  const prk = createHmac('sha256', zeroSalt).update(retired.handle, 'utf8').digest();
  return createHmac('sha256', prk).update(hkdfInfo).update(firstBlock).digest();
}
