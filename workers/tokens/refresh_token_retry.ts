/**
 * The retry record of a refresh-token rotation (docs/storage.md, "Refresh grace window"): what a
 * client that presents its old refresh token again, because it never got the answer to the
 * rotation (a timeout, a write Redis applied late, a dropped connection), needs to continue with
 * the successor instead of having its family revoked as reuse (RFC 9700 §4.14.2).
 *
 * A rotation with a grace window does not draw its successor's secret: it derives it from the
 * presented handle, the client id and a random nonce (the one-step KDF of NIST SP 800-56C Rev. 2
 * §4.1 with SHA-256), and the record keeps the nonce alone (version 2). The store only ever sees
 * SHA-256 of a handle, so a store dump derives nothing: only whoever holds the old token can, only
 * for its client, and only while the record lives (the client's grace window, its TTL).
 *
 * Version 1 records (the successor sealed with AES-256-GCM under an HKDF key) are what earlier
 * versions wrote; they still open, for the rotations of a rolling upgrade.
 */
import { createDecipheriv, createHmac, hash } from 'node:crypto';
import { pooledRandomBytes } from '../../core/crypto/random_pool.js';
import type { CompanionRecord, StoreKey } from '../../core/store/store.js';
import { familyHandleOf, type FamilyHandle } from '../../core/records/refresh_token_handle.js';

/** What the store keeps: a nonce, nothing usable without the old handle. */
export type RetryRecord = RetryRecordV2 | RetryRecordV1;

/** What rotations write now. */
export interface RetryRecordV2 {
  readonly v: 2;
  /** The derivation's nonce (16 random bytes). */
  readonly n: Uint8Array;
}

/** What earlier versions wrote: the successor itself, sealed. */
export interface RetryRecordV1 {
  readonly v: 1;
  /** IV (12 bytes) ‖ AES-256-GCM ciphertext ‖ tag (16 bytes). */
  readonly sealed: Uint8Array;
}

const nonceBytes = 16;
/** The KDF's counter for its one and only block (SP 800-56C Rev. 2 §4.1: a 32-bit big-endian 1). */
const firstCounter = '\u0000\u0000\u0000\u0001';
const derivationLabel = 'tessera refresh-token retry v2';
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
 * A rotation's successor and the record it writes in its own atomic step: the successor derived
 * from `retired`, `clientId` and a fresh nonce, which the record keeps for `graceMs`. The holder of
 * `retired` derives the same successor from the record ({@link openRetryRecord}); another client
 * derives another handle, which names no record.
 */
export function retriableSuccessor(
  retired: FamilyHandle,
  clientId: string,
  graceMs: number,
): { successor: FamilyHandle; retry: CompanionRecord<RetryRecordV2> } {
  const nonce = pooledRandomBytes(nonceBytes);
  return {
    successor: derivedSuccessor(retired, nonce, clientId),
    retry: { key: retryKey(retired), value: { v: 2, n: nonce }, ttlMs: graceMs },
  };
}

/**
 * The successor handle the record leads to with this handle and client, or `undefined` when the
 * record cannot be read (a version 1 record that does not open with them). A version 2 record
 * always leads to a handle; with another handle or client, one that names no record.
 */
export function openRetryRecord(retired: FamilyHandle, record: RetryRecord, clientId: string): string | undefined {
  if (record.v === 2) return record.n?.length === nonceBytes ? derivedSuccessor(retired, record.n, clientId).handle : undefined;
  if (record.v !== 1) return undefined;
  const sealed = Buffer.from(record.sealed);
  if (sealed.length <= ivBytes + tagBytes) return undefined;
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
 * SP 800-56C Rev. 2 §4.1, one block: SHA-256(counter ‖ Z ‖ FixedInfo), with the retired handle as
 * the secret Z (256 bits of it) and FixedInfo = label ‖ nonce ‖ client id, the client id last since
 * it is the only part of variable length. One digest, where the version 1 record took two HMACs
 * and an AES-GCM seal (9.5 µs of a worker's CPU per refresh, docs/decisions/0021-derive-the-grace-window-successor.md).
 */
function derivedSuccessor(retired: FamilyHandle, nonce: Uint8Array, clientId: string): FamilyHandle {
  const input = `${firstCounter}${retired.handle}${derivationLabel}${Buffer.from(nonce).toString('base64url')}${clientId}`;
  return familyHandleOf('rt', retired.family, hash('sha256', input, 'buffer'));
}

/**
 * The version 1 key: HKDF-SHA-256 (RFC 5869) with the whole handle as input keying material (256
 * bits of secret), no salt and 32 bytes of output, which is one block: PRK = HMAC(zero salt, IKM)
 * (§2.2), OKM = T(1) = HMAC(PRK, info ‖ 0x01) (§2.3). Written as its two HMACs because `hkdfSync`
 * costs twice as much (11.6 against 5.4 µs, docs/decisions/0015-refresh-cuts-random-pool-and-packed-values.md): it makes a KeyObject of the input on
 * every call. The bytes are `hkdfSync`'s; a test checks it.
 */
function retryKeyMaterial(retired: FamilyHandle): Buffer {
  const prk = createHmac('sha256', zeroSalt).update(retired.handle, 'utf8').digest();
  return createHmac('sha256', prk).update(hkdfInfo).update(firstBlock).digest();
}
