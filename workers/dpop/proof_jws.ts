/**
 * The compact JWS of a DPoP proof, decoded and verified on node:crypto with the public key of its
 * own header (RFC 9449 §4.2, §4.3 checks 2-7). Not jose's `jwtVerify`: with `EmbeddedJWK` it imports
 * the key and verifies through WebCrypto, about twice the CPU of `createPublicKey` and
 * `crypto.verify` per proof on these machines (bench/dpop_proof.ts: ES256 384 µs against 187 µs,
 * EdDSA 212 against 116, on a loaded 2-vCPU box), and every DPoP request pays it.
 * jose still signs every proof the tests send, openid-client's included.
 */
import { constants, createPublicKey, verify, type JsonWebKey, type KeyObject, type VerifyKeyObjectInput } from 'node:crypto';
import type { JWK } from 'jose';
import type { dpopSigningAlgorithms } from '../protocol/dpop_algorithms.js';

type ProofAlgorithm = (typeof dpopSigningAlgorithms)[number];

/** What each allowed algorithm needs of the key and of `crypto.verify` (RFC 7518 §3, RFC 8037 §3.1). */
const algorithmRules: Record<ProofAlgorithm, { kty: string; crv?: string; digest: string | null; options: Partial<VerifyKeyObjectInput> }> =
  {
    // JWS wants R||S (RFC 7518 §3.4), not DER.
    ES256: { kty: 'EC', crv: 'P-256', digest: 'sha256', options: { dsaEncoding: 'ieee-p1363' } },
    ES384: { kty: 'EC', crv: 'P-384', digest: 'sha384', options: { dsaEncoding: 'ieee-p1363' } },
    EdDSA: { kty: 'OKP', crv: 'Ed25519', digest: null, options: {} },
    RS256: { kty: 'RSA', digest: 'sha256', options: { padding: constants.RSA_PKCS1_PADDING } },
    PS256: { kty: 'RSA', digest: 'sha256', options: { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 } },
  };

// RFC 7518 §3.3, §3.5: RSA keys of at least 2048 bits.
const minRsaBits = 2048;
// Members of a private or symmetric JWK (RFC 7518 §6.2.2, §6.3.2, §6.4): never in a proof.
const privateMembers = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;
const base64url = /^[A-Za-z0-9_-]+$/;

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
  const parts = proof.split('.');
  if (parts.length !== 3 || !parts.every((part) => base64url.test(part))) return 'not a compact JWS';
  const [encodedHeader, encodedPayload, encodedSignature] = parts as [string, string, string];
  const header = parseObject(encodedHeader);
  const payload = parseObject(encodedPayload);
  if (header === undefined || payload === undefined) return 'header or payload not a JSON object';
  // RFC 9449 §4.3 check 4; RFC 7515 §4.1.11: an extension we do not understand must be refused.
  if (header.typ !== 'dpop+jwt') return 'typ';
  if (header.crit !== undefined) return 'crit';
  // Check 5: asymmetric algorithms only (`none` and HMAC are not in the table).
  const alg = header.alg;
  if (typeof alg !== 'string' || !Object.hasOwn(algorithmRules, alg)) return 'alg not allowed';
  const rules = algorithmRules[alg as ProofAlgorithm];
  // Check 7: a public key, of the algorithm's type.
  const jwk = header.jwk;
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) return 'no jwk in the header';
  if (privateMembers.some((member) => member in jwk)) return 'private key in the header';
  const { kty, crv } = jwk as JWK;
  if (kty !== rules.kty || (rules.crv !== undefined && crv !== rules.crv)) return 'jwk does not fit alg';
  let key: KeyObject;
  try {
    key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
  } catch {
    return 'jwk not a key';
  }
  if (kty === 'RSA' && (key.asymmetricKeyDetails?.modulusLength ?? 0) < minRsaBits) return 'RSA key too short';
  // Check 6: the signature.
  const signingInput = Buffer.from(`${encodedHeader}.${encodedPayload}`);
  const signature = Buffer.from(encodedSignature, 'base64url');
  let valid: boolean;
  try {
    valid = verify(rules.digest, signingInput, { key, ...rules.options }, signature);
  } catch {
    return 'signature';
  }
  return valid ? { header, payload, jwk: jwk as JWK } : 'signature';
}

function parseObject(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
