/**
 * `private_key_jwt` client authentication (RFC 7523 §2.2, OpenID Connect Core §9) as both threads
 * see it. The gateway reads the assertion's claims and picks the client's candidate keys; the
 * worker that runs the request verifies the signature with them and spends the `jti` before
 * anything else (docs/architecture.md, "Client assertions").
 */
import type { PublicJwkConfig } from './worker_config.js';

/** RFC 7523 §2.2: the `client_assertion_type` of a JWT client assertion. */
export const jwtBearerAssertionType = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/**
 * Signature algorithms a client assertion may use: asymmetric only. `none` and the HMAC family
 * are absent on purpose: an HS256 assertion "signed" with a client's public key would otherwise
 * verify (key confusion, RFC 8725 §2.1, §3.1).
 */
export const clientAssertionAlgorithms = [
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
] as const;

export type ClientAssertionAlgorithm = (typeof clientAssertionAlgorithms)[number];

const algorithmSet: ReadonlySet<string> = new Set(clientAssertionAlgorithms);

export function isClientAssertionAlgorithm(alg: unknown): alg is ClientAssertionAlgorithm {
  return typeof alg === 'string' && algorithmSet.has(alg);
}

/** The `kty` (and `crv`) a key must have to verify `alg` (RFC 7518 §3.1, RFC 8037 §3.1). */
export function keyFitsAlgorithm(jwk: PublicJwkConfig, alg: ClientAssertionAlgorithm): boolean {
  if (jwk.alg !== undefined && jwk.alg !== alg) return false;
  if (jwk.use !== undefined && jwk.use !== 'sig') return false;
  switch (alg) {
    case 'ES256':
      return jwk.kty === 'EC' && jwk.crv === 'P-256';
    case 'ES384':
      return jwk.kty === 'EC' && jwk.crv === 'P-384';
    case 'ES512':
      return jwk.kty === 'EC' && jwk.crv === 'P-521';
    case 'EdDSA':
    case 'Ed25519':
      return jwk.kty === 'OKP' && jwk.crv === 'Ed25519';
    default:
      return jwk.kty === 'RSA';
  }
}

/**
 * A client assertion whose claims the gateway checked, ready for the worker: the worker verifies
 * `jwt` against one of `keys` (each fits the header's `alg`), then spends `jti` until `exp`.
 */
export interface ClientAssertionCheck {
  readonly jwt: string;
  readonly alg: ClientAssertionAlgorithm;
  /** The client's keys that may have signed it (by `kid` when the header names one). */
  readonly keys: readonly PublicJwkConfig[];
  readonly jti: string;
  /** Epoch seconds: the `jti` is kept until then. */
  readonly exp: number;
}
