import { constants, createHash, createPublicKey, verify, type JsonWebKey, type KeyObject, type VerifyKeyObjectInput } from 'node:crypto';
import { threadId } from 'node:worker_threads';
import { keyFitsAlgorithm, isClientAssertionAlgorithm, type ClientAssertionCheck } from '../protocol/client_assertion.js';
import { OAuthError, OAuthErrors } from '../protocol/oauth_errors.js';
import type { PublicJwkConfig } from '../protocol/worker_config.js';
import type { Store, StoreKey } from '../store/store.js';

/** Imported keys kept per thread; past it the cache starts again (clients' keys are few). */
const maxCachedKeys = 1024;
/** A spent `jti` is kept this much past the assertion's `exp`: the clock skew the gateway allowed. */
const skewMs = 5_000;

interface Verifier {
  readonly digest: string | null;
  /** What the imported key must be (node:crypto's `asymmetricKeyType` and curve). */
  readonly keyType: string;
  readonly curve?: string;
  readonly options: (key: KeyObject) => KeyObject | VerifyKeyObjectInput;
}

const ecdsa = (digest: string, curve: string): Verifier => ({
  digest,
  keyType: 'ec',
  curve,
  // RFC 7518 §3.4: JWS carries R||S, not DER.
  options: (key) => ({ key, dsaEncoding: 'ieee-p1363' }),
});
const pkcs1 = (digest: string): Verifier => ({ digest, keyType: 'rsa', options: (key) => key });
// RFC 7518 §3.5: the salt is as long as the digest.
const pss = (digest: string, saltLength: number): Verifier => ({
  digest,
  keyType: 'rsa',
  options: (key) => ({ key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength }),
});
const eddsa: Verifier = { digest: null, keyType: 'ed25519', options: (key) => key };

const verifiers: Readonly<Record<string, Verifier>> = {
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
};

/**
 * The worker's share of `private_key_jwt` (RFC 7523 §3, docs/architecture.md "Client
 * assertions"): the signature, with node:crypto (1.9 times jose's best ES256 throughput per
 * CPU-second, bench/README.md "sign"), against the candidate keys the gateway picked, then the `jti`
 * spent in the store until the assertion's `exp`, atomically, so that of any number of
 * presentations on any number of gateways sharing the store exactly one passes (RFC 7523 §3
 * item 7). Every refusal is `invalid_client`; the reason goes to the log only.
 */
export class ClientAssertionVerifier {
  private readonly keys = new Map<string, KeyObject | null>();
  private sequence = 0;

  constructor(
    private readonly store: Store,
    private readonly now: () => number = Date.now,
  ) {}

  async verify(clientId: string, check: ClientAssertionCheck): Promise<void> {
    if (!this.signatureVerifies(check)) throw refused('client assertion: signature does not verify with the client keys');
    const ttlMs = Math.max(1000, check.exp * 1000 - this.now() + skewMs);
    // Unique per attempt: the store answers the value it holds, which is ours only if we wrote it.
    const marker = `${threadId}.${++this.sequence}`;
    const held = await this.store.putIfAbsent(jtiKey(clientId, check.jti), marker, ttlMs);
    if (held !== marker) throw refused('client assertion: jti already used');
  }

  private signatureVerifies({ jwt, alg, keys }: ClientAssertionCheck): boolean {
    // The gateway already checked these; a worker trusts no algorithm it was not built for.
    const verifier = isClientAssertionAlgorithm(alg) ? verifiers[alg] : undefined;
    if (verifier === undefined) return false;
    const dot = jwt.lastIndexOf('.');
    const input = Buffer.from(jwt.slice(0, dot), 'latin1');
    const signature = Buffer.from(jwt.slice(dot + 1), 'base64url');
    for (const jwk of keys) {
      if (!keyFitsAlgorithm(jwk, alg)) continue;
      const key = this.importKey(jwk);
      if (key === null || !fits(key, verifier)) continue;
      try {
        if (verify(verifier.digest, input, verifier.options(key), signature)) return true;
      } catch {
        // A malformed signature for this key type: not this key.
      }
    }
    return false;
  }

  private importKey(jwk: PublicJwkConfig): KeyObject | null {
    const id = `${jwk.kty}.${jwk.crv ?? ''}.${jwk.x ?? ''}.${jwk.y ?? ''}.${jwk.n ?? ''}.${jwk.e ?? ''}`;
    const cached = this.keys.get(id);
    if (cached !== undefined) return cached;
    let key: KeyObject | null;
    try {
      key = createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, n: jwk.n, e: jwk.e } as JsonWebKey, format: 'jwk' });
    } catch {
      key = null;
    }
    if (this.keys.size >= maxCachedKeys) this.keys.clear();
    this.keys.set(id, key);
    return key;
  }
}

// RFC 8725 §3.1: the key's own type decides, never the header alone; RSA keys of 2048 bits or more (RFC 7518 §3.3).
function fits(key: KeyObject, verifier: Verifier): boolean {
  if (key.type !== 'public' || key.asymmetricKeyType !== verifier.keyType) return false;
  if (verifier.curve !== undefined) return key.asymmetricKeyDetails?.namedCurve === verifier.curve;
  if (verifier.keyType === 'rsa') return (key.asymmetricKeyDetails?.modulusLength ?? 0) >= 2048;
  return true;
}

/** Spent assertion ids, per client, hashed like every store key (docs/storage.md). */
function jtiKey(clientId: string, jti: string): StoreKey {
  return { kind: 'misc', id: `cajti:${createHash('sha256').update(`${clientId}\u0000${jti}`, 'utf8').digest('base64url')}` };
}

function refused(detail: string): OAuthError {
  return new OAuthError(OAuthErrors.invalidClient, { detail });
}
