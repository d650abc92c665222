import { pooledRandomBytes } from '../crypto/random_pool.js';
import { hashHandle } from '../store/handle.js';
import { subFamily, type RecordKind, type StoreKey } from '../store/store.js';

const familyBytes = 16;
const secretBytes = 32;
const handleLength = Math.ceil(((familyBytes + secretBytes) * 4) / 3);

/**
 * Refresh tokens and authorization codes are 48 random bytes, base64url: 16 name the family, 32
 * are the secret (≥ 256 bits, docs/endpoints.md). Carrying the family in the handle lets the store key the
 * record under the family's hash tag (`{family}`), so consuming, rotating and revoking stay
 * single-slot operations on Redis Cluster; the store itself only ever sees SHA-256 of the whole
 * handle. A code and the refresh tokens issued from it share one family, so replaying the code
 * revokes them together.
 */
export interface FamilyHandle {
  readonly handle: string;
  readonly family: string;
  readonly key: StoreKey;
}

export function newFamilyId(): string {
  return pooledRandomBytes(familyBytes).toString('base64url');
}

export function newFamilyHandle(kind: RecordKind, family: string): FamilyHandle {
  return familyHandleOf(kind, family, pooledRandomBytes(secretBytes));
}

/**
 * The handle of `family` with this 32-byte secret: drawn at random, or derived from another
 * handle's secret for a grace-window retry (refresh_token_retry.ts).
 */
export function familyHandleOf(kind: RecordKind, family: string, secret: Uint8Array): FamilyHandle {
  if (secret.length !== secretBytes) throw new RangeError(`a handle's secret is ${secretBytes} bytes, got ${secret.length}`);
  const handle = Buffer.concat([Buffer.from(family, 'base64url'), secret]).toString('base64url');
  return { handle, family, key: { kind, id: hashHandle(handle), family } };
}

/** `undefined` for anything that cannot be one of our handles. */
export function parseFamilyHandle(kind: RecordKind, handle: string): FamilyHandle | undefined {
  if (handle.length !== handleLength || !/^[A-Za-z0-9_-]+$/.test(handle)) return undefined;
  const bytes = Buffer.from(handle, 'base64url');
  if (bytes.length !== familyBytes + secretBytes) return undefined;
  const family = bytes.subarray(0, familyBytes).toString('base64url');
  return { handle, family, key: { kind, id: hashHandle(handle), family } };
}

export const newRefreshHandle = (family: string): FamilyHandle => newFamilyHandle('rt', family);
export const parseRefreshHandle = (handle: string): FamilyHandle | undefined => parseFamilyHandle('rt', handle);

/**
 * Access tokens issued in a family are recorded beside it, in a sub-family: revoking the family
 * leaves them for the revocation to list and deny, and a rotation can write one in the same step.
 */
export function issuedTokensFamily(family: string): string {
  return subFamily(family, 'at');
}
