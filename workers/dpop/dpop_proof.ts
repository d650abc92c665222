/**
 * DPoP proof verification (RFC 9449 §4.3), in the worker threads: a proof costs one signature
 * verification, which must not run on the uWS thread. The steps are the RFC's list, in its order;
 * the replay check comes last so that invalid proofs never fill the replay cache.
 */
import { hash, randomUUID } from 'node:crypto';
import { verifyProofJws } from './proof_jws.js';
import { jwkThumbprint } from '../../core/crypto/jwk_thumbprint.js';
import type { DPoPNonces } from '../../core/dpop_nonce.js';
import type { Store, StoreKey } from '../../core/store/store.js';

/** What the request a proof came with must match. */
export interface ProofExpectation {
  /** The request's method, upper case (RFC 9449 §4.3 check 8). */
  readonly htm: string;
  /** The request's URL, from {@link normalizeHtu} (check 9). */
  readonly htu: string;
  /** The access token the request presents, checked against `ath` (check 12). */
  readonly accessToken?: string | undefined;
  /** The proof must carry a current server nonce (check 10, RFC 9449 §8). */
  readonly requireNonce: boolean;
}

export type ProofOutcome =
  | { readonly ok: true /** RFC 7638 SHA-256 thumbprint of the proof's key: the `cnf.jkt` of a bound token. */; readonly jkt: string }
  | { readonly ok: false; readonly nonce: boolean /** For logs only. */; readonly reason: string };

// A proof is a JWT with a public key in its header: a few hundred bytes (an RSA 4096 key, 1 KiB).
const maxProofLength = 8 * 1024;
const maxJtiLength = 256;

export interface DPoPProofServices {
  readonly store: Store;
  readonly nonces: DPoPNonces;
  /** `dpop.proofWindowSeconds`. */
  readonly windowSeconds: number;
  /** Epoch milliseconds. */
  readonly now: () => number;
}

/**
 * Verifies one proof for one request. Nothing is kept per proof except its `jti` in the store,
 * until the proof could no longer be accepted anyway.
 * @throws StoreUnavailableError when the replay cache cannot be written: the caller answers 503.
 */
export async function verifyDPoPProof(proof: string, expected: ProofExpectation, services: DPoPProofServices): Promise<ProofOutcome> {
  // Checks 2 and 4-7: one well-formed JWS, `typ`, an allowed algorithm, its own public key, the signature.
  if (proof.length > maxProofLength) return refused('proof too long');
  const decoded = verifyProofJws(proof);
  if (typeof decoded === 'string') return refused(decoded);
  const { payload, jwk } = decoded;
  // Check 3: the required claims, of the right types.
  const { jti, htm, htu, iat } = payload;
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > maxJtiLength) return refused('jti');
  if (typeof htm !== 'string' || typeof htu !== 'string' || typeof iat !== 'number') return refused('htm, htu or iat missing');
  // Checks 8-9: this request's method and URL, the URL without query and fragment.
  if (htm !== expected.htm) return refused('htm');
  if (normalizeHtu(htu) !== expected.htu) return refused('htu');
  const now = services.now();
  // Check 10: the server's nonce, when it wants one (RFC 9449 §8).
  if (expected.requireNonce && !services.nonces.isValid(payload.nonce, now)) return { ok: false, nonce: true, reason: 'nonce' };
  // Check 11: created within the window around now (RFC 9449 §11.1).
  const window = services.windowSeconds;
  if (Math.abs(now / 1000 - iat) > window) return refused('iat outside the window');
  // Check 12: the access token it accompanies.
  if (expected.accessToken !== undefined && payload.ath !== accessTokenHash(expected.accessToken)) return refused('ath');
  const jkt = jwkThumbprint(jwk);
  // The replay check (RFC 9449 §11.1): one atomic write, shared by every gateway on the store.
  if (!(await recordJti(services, jkt, jti, (iat + window) * 1000 - now))) return refused('jti replayed');
  return { ok: true, jkt };
}

function refused(reason: string): ProofOutcome {
  return { ok: false, nonce: false, reason };
}

/**
 * `jti` is unique per key: the record lives until the proof's `iat` leaves the window, after which
 * the proof is refused by its time anyway.
 */
async function recordJti(services: DPoPProofServices, jkt: string, jti: string, remainingMs: number): Promise<boolean> {
  const marker = randomUUID();
  const stored = await services.store.putIfAbsent(dpopJtiKey(jkt, jti), marker, Math.max(1000, remainingMs + 1000));
  return stored === marker;
}

/** The replay-cache record of one proof (docs/storage.md, "Records"). */
export function dpopJtiKey(jkt: string, jti: string): StoreKey {
  return { kind: 'misc', id: `dpop:${hash('sha256', `${jkt}\u0000${jti}`, 'base64url')}` };
}

export { jwkThumbprint };

/** RFC 9449 §4.2 `ath`: base64url(SHA-256(ASCII access token)). */
export function accessTokenHash(token: string): string {
  return hash('sha256', Buffer.from(token, 'ascii'), 'base64url');
}

/**
 * An `htu` compared without query and fragment, after URL normalization (RFC 9449 §4.3 check 9,
 * RFC 3986 §6.2.2 and §6.2.3: scheme and host in lower case, a default port dropped). `''` for
 * anything that is not an http(s) URL, which matches nothing.
 */
export function normalizeHtu(htu: string): string {
  if (!URL.canParse(htu)) return '';
  const url = new URL(htu);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return '';
  return `${url.protocol}//${url.host}${url.pathname}`;
}
