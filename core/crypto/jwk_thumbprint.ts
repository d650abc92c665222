import { hash } from 'node:crypto';

/** The public members of a JWK that its thumbprint reads. */
export interface ThumbprintJwk {
  readonly kty?: string | undefined;
  readonly crv?: string | undefined;
  readonly x?: string | undefined;
  readonly y?: string | undefined;
  readonly n?: string | undefined;
  readonly e?: string | undefined;
}

/**
 * RFC 7638 SHA-256 thumbprint: the key's required members, in lexicographic order, as JSON without
 * whitespace. DPoP binds tokens by it (RFC 9449 §6.1, `cnf.jkt`); `self_signed_tls_client_auth`
 * matches a certificate's key to the client's JWKS by it.
 */
export function jwkThumbprint(jwk: ThumbprintJwk): string {
  const canonical =
    jwk.kty === 'RSA'
      ? { e: jwk.e, kty: jwk.kty, n: jwk.n }
      : jwk.kty === 'EC'
        ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }
        : { crv: jwk.crv, kty: jwk.kty, x: jwk.x };
  return hash('sha256', JSON.stringify(canonical), 'base64url');
}
