/**
 * Client and API resource secrets are stored as Base64(SHA-256(UTF-8 secret)), the same form as
 * IdentityServer's `"secret".Sha256()`, so existing configs carry over unchanged.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * The stored form of a client secret (the `value` of a `clientSecrets` entry).
 *
 * @example
 * ```ts
 * hashClientSecret('secret'); // 'K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols='
 * ```
 */
export function hashClientSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('base64');
}

/**
 * Compares a presented plaintext secret with a stored value in constant time (both sides are
 * 32-byte digests, so the comparison time does not depend on the presented secret).
 */
export function verifyClientSecret(presented: string, storedValue: string): boolean {
  const presentedDigest = createHash('sha256').update(presented, 'utf8').digest();
  const storedDigest = Buffer.from(storedValue, 'base64');
  if (storedDigest.length !== presentedDigest.length) return false;
  return timingSafeEqual(presentedDigest, storedDigest);
}
