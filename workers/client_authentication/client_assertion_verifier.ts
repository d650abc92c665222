import { createPublicKey, hash, type JsonWebKey, type KeyObject } from 'node:crypto';
import { threadId } from 'node:worker_threads';
import { keyFitsAlgorithm as keyFitsJwk, isClientAssertionAlgorithm, type ClientAssertionCheck } from '../../core/client_assertion.js';
import { keyFitsAlgorithm, verifyJwsSignature } from '../../core/crypto/jws_signature.js';
import { OAuthError, OAuthErrors } from '../../core/oauth_errors.js';
import type { PublicJwkConfig } from '../../core/worker_config.js';
import type { Store, StoreKey } from '../../core/store/store.js';
import type { RequestObjectCheck } from '../../core/request_object.js';

/** Imported keys kept per thread; past it the cache starts again (clients' keys are few). */
const maxCachedKeys = 1024;
/** A spent `jti` is kept this much past the assertion's `exp`: the clock skew the gateway allowed. */
const skewMs = 5_000;

/**
 * The worker's share of `private_key_jwt` (RFC 7523 §3, docs/architecture.md "Client
 * assertions"): the signature (core/crypto/jws_signature.ts), against the candidate keys the gateway picked, then the `jti`
 * spent in the store until the assertion's `exp`, atomically, so that of any number of
 * presentations on any number of gateways sharing the store exactly one passes (RFC 7523 §3
 * item 7). Every refusal is `invalid_client`; the reason goes to the log, and a replay has its
 * own description so the gateway does not count it as a guess.
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
    // Its own answer: a replay of a good assertion is no guess, and must not count as one.
    if (held !== marker) throw new OAuthError(OAuthErrors.clientAssertionReplayed, { detail: 'client assertion: jti already used' });
  }

  /**
   * A request object (RFC 9101 §6.2, checked the same way: the client's keys the gateway picked),
   * then its `jti`, when it has one, spent until its `exp` (RFC 9101 §10.8: a replayed request
   * object is refused). Every refusal is `invalid_request_object`.
   */
  async verifyRequestObject(clientId: string, check: RequestObjectCheck): Promise<void> {
    if (!this.signatureVerifies(check)) {
      throw new OAuthError(OAuthErrors.invalidRequestObject, { detail: 'request object: signature does not verify with the client keys' });
    }
    if (check.jti === undefined) return;
    const ttlMs = Math.max(1000, check.exp * 1000 - this.now() + skewMs);
    const marker = `${threadId}.${++this.sequence}`;
    const held = await this.store.putIfAbsent(requestObjectJtiKey(clientId, check.jti), marker, ttlMs);
    if (held !== marker) throw new OAuthError(OAuthErrors.invalidRequestObject, { detail: 'request object: jti already used' });
  }

  private signatureVerifies({ jwt, alg, keys }: Pick<ClientAssertionCheck, 'jwt' | 'alg' | 'keys'>): boolean {
    // The gateway already checked the algorithm; a worker trusts none it was not built for.
    if (!isClientAssertionAlgorithm(alg)) return false;
    const dot = jwt.lastIndexOf('.');
    const input = Buffer.from(jwt.slice(0, dot), 'latin1');
    const signature = Buffer.from(jwt.slice(dot + 1), 'base64url');
    for (const jwk of keys) {
      if (!keyFitsJwk(jwk, alg)) continue;
      const key = this.importKey(jwk);
      if (key !== null && keyFitsAlgorithm(key, alg) && verifyJwsSignature(alg, input, signature, key)) return true;
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

/** Spent assertion ids, per client, hashed like every store key (docs/storage.md). */
function jtiKey(clientId: string, jti: string): StoreKey {
  return { kind: 'misc', id: `cajti:${hash('sha256', `${clientId}\u0000${jti}`, 'base64url')}` };
}

/** Spent request object ids, per client, apart from the assertions' (another kind of token). */
function requestObjectJtiKey(clientId: string, jti: string): StoreKey {
  return { kind: 'misc', id: `rojti:${hash('sha256', `${clientId}\u0000${jti}`, 'base64url')}` };
}

function refused(detail: string): OAuthError {
  return new OAuthError(OAuthErrors.invalidClient, { detail });
}
