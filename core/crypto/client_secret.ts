/**
 * Client and API resource secrets are stored as Base64(SHA-256(UTF-8 secret)), the same form as
 * IdentityServer's `"secret".Sha256()`, so existing configs carry over unchanged. The gateway compares
 * presented secrets with them (`matchesStoredSecret` in gateway/client_authentication/authenticator.ts).
 */
import { createHash } from 'node:crypto';

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
