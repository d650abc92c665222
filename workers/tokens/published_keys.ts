/**
 * The signing keys the key ring publishes, imported once for node:crypto, and the JWS check of a
 * token signed with one of them: the compact shape, the protected header, the key its `kid` and
 * `alg` name, the signature, the payload as a JSON object. On node:crypto rather than jose's
 * `jwtVerify` (WebCrypto), which costs about twice the CPU per ES256 verification
 * (docs/decisions/0018-verify-access-tokens-with-node-crypto.md), and introspection, delegation and token
 * exchange pay one on every request. The rules and the reason codes are jose's, so that logs and
 * validators see what they saw before; test/workers/tokens/token_validator.test.ts checks every
 * forgery against jose's own verdict.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { decodeJsonObject, signingInputOf, splitCompactJws } from '../../core/crypto/compact_jws.js';
import { keyFitsAlgorithm, verifyJwsSignature } from '../../core/crypto/jws_signature.js';
import { importPrivateKey, type SigningAlgorithm, type SigningKeyMaterial } from '../../core/signing_key.js';

/** Why a JWS is refused: jose's error codes (`src/util/errors.ts`) for the same checks. */
export type JwsRefusal =
  | 'ERR_JWS_INVALID'
  | 'ERR_JOSE_NOT_SUPPORTED'
  | 'ERR_JOSE_ALG_NOT_ALLOWED'
  | 'ERR_JWKS_NO_MATCHING_KEY'
  | 'ERR_JWKS_MULTIPLE_MATCHING_KEYS'
  | 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED'
  | 'ERR_JWT_INVALID';

export interface VerifiedJws {
  readonly header: Readonly<Record<string, unknown>>;
  readonly payload: Record<string, unknown>;
}

interface PublishedKey {
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  readonly key: KeyObject;
  /** RFC 7518 §3.3: an RSA key under 2048 bits verifies nothing (jose refuses it as well). */
  readonly usable: boolean;
}

export class PublishedKeys {
  private readonly keys: readonly PublishedKey[];
  private readonly algorithms: ReadonlySet<string>;

  /** Every published key, retired ones included: a token they signed stays good until it expires. */
  constructor(published: readonly SigningKeyMaterial[]) {
    this.keys = published.map((material) => {
      const key = createPublicKey(importPrivateKey(material));
      return { kid: material.kid, alg: material.alg, key, usable: keyFitsAlgorithm(key, material.alg) };
    });
    this.algorithms = new Set(published.map((k) => k.alg));
  }

  /** The header and payload of `jws` when its signature verifies with a published key, else why not. */
  verify(jws: string): VerifiedJws | JwsRefusal {
    const parts = splitCompactJws(jws);
    if (parts === undefined) return 'ERR_JWS_INVALID';
    const header = decodeJsonObject(parts.header);
    if (header === undefined) return 'ERR_JWS_INVALID';
    // RFC 7515 §4.1.11: an extension this verifier does not implement must be refused.
    if (header.crit !== undefined) return 'ERR_JOSE_NOT_SUPPORTED';
    // RFC 8725 §3.1: only the algorithms of our own keys, so never `none` nor an HMAC keyed with a
    // public key; and the key that `kid` names must be of that same algorithm.
    const alg = header.alg;
    if (typeof alg !== 'string' || alg === '') return 'ERR_JWS_INVALID';
    if (!this.algorithms.has(alg)) return 'ERR_JOSE_ALG_NOT_ALLOWED';
    const found = this.keyFor(alg, header.kid);
    if (typeof found === 'string') return found;
    if (!found.usable) return 'ERR_JWS_INVALID';
    const signature = Buffer.from(parts.signature, 'base64url');
    if (!verifyJwsSignature(found.alg, signingInputOf(parts), signature, found.key)) return 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED';
    // RFC 7519 §7.2 step 10: the claims are a JSON object.
    const payload = decodeJsonObject(parts.payload);
    if (payload === undefined) return 'ERR_JWT_INVALID';
    return { header, payload };
  }

  /** As jose's local JWK set picks one: same `alg`, the `kid` when the header has one; exactly one key. */
  private keyFor(alg: string, kid: unknown): PublishedKey | JwsRefusal {
    let found: PublishedKey | undefined;
    for (const key of this.keys) {
      if (key.alg !== alg || (kid !== undefined && kid !== key.kid)) continue;
      if (found !== undefined) return 'ERR_JWKS_MULTIPLE_MATCHING_KEYS';
      found = key;
    }
    return found ?? 'ERR_JWKS_NO_MATCHING_KEY';
  }
}
