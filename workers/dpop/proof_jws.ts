/**
 * The compact JWS of a DPoP proof, decoded and verified on node:crypto with the public key of its
 * own header (RFC 9449 §4.2, §4.3 checks 2-7). Not jose's `jwtVerify`: with `EmbeddedJWK` it imports
 * the key and verifies through WebCrypto, about twice the CPU of `createPublicKey` and
 * `crypto.verify` per proof on these machines (ES256 384 µs against 187 µs, EdDSA 212 against 116,
 * on a loaded 2-vCPU box: docs/decisions/0011-dpop-proofs-on-node-crypto.md), and every DPoP request pays it.
 * jose still signs every proof the tests send, openid-client's included.
 */
import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import type { JWK } from 'jose';
import { decodeJsonObject, signingInputOf, splitCompactJws } from '../../core/crypto/compact_jws.js';
import { keyFitsAlgorithm, verifyJwsSignature } from '../../core/crypto/jws_signature.js';
import { dpopSigningAlgorithms } from '../../core/dpop_algorithms.js';

type DPoPAlgorithm = (typeof dpopSigningAlgorithms)[number];

function isDPoPAlgorithm(alg: unknown): alg is DPoPAlgorithm {
  return typeof alg === 'string' && (dpopSigningAlgorithms as readonly string[]).includes(alg);
}

// Members of a private or symmetric JWK (RFC 7518 §6.2.2, §6.3.2, §6.4): never in a proof.
const privateMembers = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;

export interface DecodedProof {
  readonly header: Readonly<Record<string, unknown>>;
  readonly payload: Readonly<Record<string, unknown>>;
  readonly jwk: JWK;
}

/**
 * The header and claims of a proof whose signature verifies with the public key in its header,
 * or why not (for logs): three base64url parts, JSON objects, `typ: dpop+jwt`, an allowed `alg`
 * that fits the key, a public key only, no `crit` extension this verifier would ignore.
 */
export function verifyProofJws(proof: string): DecodedProof | string {
  const parts = splitCompactJws(proof);
  if (parts === undefined) return 'not a compact JWS';
  const header = decodeJsonObject(parts.header);
  const payload = decodeJsonObject(parts.payload);
  if (header === undefined || payload === undefined) return 'header or payload not a JSON object';
  // RFC 9449 §4.3 check 4; RFC 7515 §4.1.11: an extension we do not understand must be refused.
  if (header.typ !== 'dpop+jwt') return 'typ';
  if (header.crit !== undefined) return 'crit';
  // Check 5: asymmetric algorithms only (`none` and HMAC are not on the list).
  const alg = header.alg;
  if (!isDPoPAlgorithm(alg)) return 'alg not allowed';
  // Check 7: a public key, of the algorithm's type (and RSA of 2048 bits or more).
  const jwk = header.jwk;
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) return 'no jwk in the header';
  if (privateMembers.some((member) => member in jwk)) return 'private key in the header';
  let key: KeyObject;
  try {
    key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
  } catch {
    return 'jwk not a key';
  }
  if (!keyFitsAlgorithm(key, alg)) return 'jwk does not fit alg';
  // Check 6: the signature.
  const signature = Buffer.from(parts.signature, 'base64url');
  return verifyJwsSignature(alg, signingInputOf(parts), signature, key) ? { header, payload, jwk: jwk as JWK } : 'signature';
}
