import { hkdfSync } from 'node:crypto';

/**
 * The key of the DPoP server nonces (core/dpop_nonce.ts), derived from the page secret
 * with HKDF (RFC 5869) under its own label: every gateway that shares the page secret (the store's,
 * gateway/keys/page_secret.ts) accepts the others' nonces, and the derived key says nothing of the
 * secret the pages' cookies and CSRF tokens use.
 */
export function deriveDPoPNonceKey(pageSecret: string): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', pageSecret, 'tessera', 'dpop-nonce', 32));
}
