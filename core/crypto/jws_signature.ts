/**
 * Verifying the signature of a JWS a client signed (RFC 7515 §5.2): DPoP proofs and
 * `private_key_jwt` client assertions, on node:crypto rather than jose's WebCrypto path, which costs
 * about twice the CPU per verification (docs/decisions/0011-dpop-proofs-on-node-crypto.md); these run on every request
 * that carries one. Which algorithms a use allows is its own list; what each algorithm needs of
 * the key and of `crypto.verify` is here, once.
 */
import { constants, verify, type KeyObject, type VerifyKeyObjectInput } from 'node:crypto';

interface Verifier {
  readonly digest: string | null;
  /** What the key must be (node:crypto's `asymmetricKeyType`, and the curve for EC). */
  readonly keyType: 'ec' | 'rsa' | 'ed25519';
  readonly curve?: string;
  readonly options: (key: KeyObject) => KeyObject | VerifyKeyObjectInput;
}

// RFC 7518 §3.4: JWS carries R||S, not DER.
const ecdsa = (digest: string, curve: string): Verifier => ({
  digest,
  keyType: 'ec',
  curve,
  options: (key) => ({ key, dsaEncoding: 'ieee-p1363' }),
});
const pkcs1 = (digest: string): Verifier => ({ digest, keyType: 'rsa', options: (key) => key });
// RFC 7518 §3.5: the salt is as long as the digest.
const pss = (digest: string, saltLength: number): Verifier => ({
  digest,
  keyType: 'rsa',
  options: (key) => ({ key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength }),
});
// RFC 8037 §3.1.
const eddsa: Verifier = { digest: null, keyType: 'ed25519', options: (key) => key };

/** Asymmetric algorithms only: `none` and the HMACs, whose key a client would hand us, are not here. */
const verifiers = {
  ES256: ecdsa('sha256', 'prime256v1'),
  ES384: ecdsa('sha384', 'secp384r1'),
  ES512: ecdsa('sha512', 'secp521r1'),
  RS256: pkcs1('sha256'),
  RS384: pkcs1('sha384'),
  RS512: pkcs1('sha512'),
  PS256: pss('sha256', 32),
  PS384: pss('sha384', 48),
  PS512: pss('sha512', 64),
  EdDSA: eddsa,
  Ed25519: eddsa,
} as const satisfies Record<string, Verifier>;

export type JwsAlgorithm = keyof typeof verifiers;

// RFC 7518 §3.3, §3.5: RSA keys of at least 2048 bits.
const minRsaBits = 2048;

/**
 * Whether `key` is a public key of the type `alg` needs (RFC 8725 §3.1: the key's own type
 * decides, never the header alone).
 */
export function keyFitsAlgorithm(key: KeyObject, alg: JwsAlgorithm): boolean {
  const verifier: Verifier = verifiers[alg];
  if (key.type !== 'public' || key.asymmetricKeyType !== verifier.keyType) return false;
  if (verifier.curve !== undefined) return key.asymmetricKeyDetails?.namedCurve === verifier.curve;
  if (verifier.keyType === 'rsa') return (key.asymmetricKeyDetails?.modulusLength ?? 0) >= minRsaBits;
  return true;
}

/** Whether `signature` over `signingInput` (`header.payload`, ASCII) verifies with `key` under `alg`. */
export function verifyJwsSignature(alg: JwsAlgorithm, signingInput: Buffer, signature: Buffer, key: KeyObject): boolean {
  const verifier: Verifier = verifiers[alg];
  try {
    return verify(verifier.digest, signingInput, verifier.options(key), signature);
  } catch {
    // A signature malformed for this key type.
    return false;
  }
}
