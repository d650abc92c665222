import type { JWTPayload } from 'jose';
import type { Claim, TokenValidationResult, TokenValidator } from '../../core/validator_api.js';
import type { Store } from '../../core/store/store.js';
import type { SigningKeyMaterial } from '../../core/signing_key.js';
import { PublishedKeys, type JwsRefusal } from './published_keys.js';
import { validatedTokens } from './validated_tokens.js';
import { revokedJtiKey } from '../../core/records/family_revocation.js';

/** Seconds of clock skew tolerated on `exp`/`nbf`/`iat` between gateway instances. */
export const clockToleranceSeconds = 5;

// An access token longer than this is not ours; refuse before parsing.
const maxTokenLength = 16 * 1024;

/** Present in every access token this service issues (workers/tokens/access_token.ts). */
const requiredClaims = ['iss', 'client_id', 'sub', 'jti', 'iat', 'exp'] as const;

/**
 * Why a token is refused, for logs and validators (`invalid_token: <reason>`): jose's error codes
 * for the checks jose defined (these were jose's own until the check moved to node:crypto), ours
 * for the rest.
 */
export type TokenRefusal =
  | JwsRefusal
  | 'ERR_JWT_CLAIM_VALIDATION_FAILED'
  | 'ERR_JWT_EXPIRED'
  | 'malformed token'
  | 'iat in the future'
  | 'token revoked';

/**
 * Validates this service's own JWT access tokens: the signature over the published keys (so
 * retired keys still verify) with only their asymmetric algorithms (no `none`, no HS256 with a
 * public key; workers/tokens/published_keys.ts), `typ: at+jwt` (so ID tokens are refused), `iss`,
 * the required claims, time claims, then the `jti` deny list.
 */
export class AccessTokenValidator implements TokenValidator {
  private keys: PublishedKeys;

  constructor(
    private readonly options: {
      issuer: string;
      keys: readonly SigningKeyMaterial[];
      store: Store;
      now: () => number;
    },
  ) {
    this.keys = new PublishedKeys(options.keys);
  }

  /** Verifies with these keys from now on: the published set changed (a rotation, a reload). */
  useKeys(keys: readonly SigningKeyMaterial[]): void {
    this.keys = new PublishedKeys(keys);
  }

  /** @throws StoreUnavailableError when the deny list cannot be read: the caller answers 503. */
  async validateAccessToken(token: string): Promise<TokenValidationResult> {
    const outcome = await this.verify(token);
    if (!outcome.ok) return invalid(outcome.reason);
    // Frozen, claims and all: what a validator hands back as `subjectToken` is what was verified.
    const result: TokenValidationResult = Object.freeze({
      isError: false,
      claims: Object.freeze(toClaims(outcome.payload).map((c) => Object.freeze(c))),
    });
    validatedTokens.add(result);
    return result;
  }

  /**
   * The checked payload of one of our access tokens. `checkTime: false` accepts an expired token
   * (revocation of an expired token is a no-op, not an error).
   * @throws StoreUnavailableError when the deny list cannot be read.
   */
  async verify(
    token: string,
    options: { checkTime?: boolean } = {},
  ): Promise<{ ok: true; payload: JWTPayload } | { ok: false; reason: TokenRefusal }> {
    if (typeof token !== 'string' || token.length === 0 || token.length > maxTokenLength) return { ok: false, reason: 'malformed token' };
    const verified = this.keys.verify(token);
    if (typeof verified === 'string') return { ok: false, reason: verified };
    const refusal = this.claimsRefusal(verified.header, verified.payload, options.checkTime !== false);
    if (refusal !== undefined) return { ok: false, reason: refusal };
    // A store failure propagates: the caller answers 503 rather than trusting an unchecked token.
    if ((await this.options.store.get(revokedJtiKey(verified.payload.jti as string))) !== null)
      return { ok: false, reason: 'token revoked' };
    return { ok: true, payload: verified.payload };
  }

  /** The claims checks of RFC 9068 §4 and RFC 7519 §4.1, in jose's order, or none when they hold. */
  private claimsRefusal(
    header: Readonly<Record<string, unknown>>,
    payload: Record<string, unknown>,
    checkTime: boolean,
  ): TokenRefusal | undefined {
    // RFC 9068 §4: `typ` is `at+jwt` (an ID token is `JWT`), compared as a media type (RFC 7515 §4.1.9).
    if (typeof header.typ !== 'string' || mediaType(header.typ) !== 'application/at+jwt') return 'ERR_JWT_CLAIM_VALIDATION_FAILED';
    for (const claim of requiredClaims) if (!Object.hasOwn(payload, claim)) return 'ERR_JWT_CLAIM_VALIDATION_FAILED';
    if (payload.iss !== this.options.issuer) return 'ERR_JWT_CLAIM_VALIDATION_FAILED';
    const nowMs = this.options.now();
    const now = Math.floor(nowMs / 1000);
    // An expired token is still ours to revoke: then no tolerance bounds the time claims.
    const tolerance = checkTime ? clockToleranceSeconds : Number.MAX_SAFE_INTEGER;
    const { iat, nbf, exp } = payload;
    if (typeof iat !== 'number' || (nbf !== undefined && typeof nbf !== 'number')) return 'ERR_JWT_CLAIM_VALIDATION_FAILED';
    if (nbf !== undefined && nbf > now + tolerance) return 'ERR_JWT_CLAIM_VALIDATION_FAILED';
    if (typeof exp !== 'number') return 'ERR_JWT_CLAIM_VALIDATION_FAILED';
    if (exp <= now - tolerance) return 'ERR_JWT_EXPIRED';
    // A token "issued" later than now was not issued by this clock (RFC 7519 §4.1.6; a forged or
    // mis-clocked token), so it is refused.
    if (checkTime && iat > nowMs / 1000 + clockToleranceSeconds) return 'iat in the future';
    return undefined;
  }
}

/** A `typ` as the media type it names: `at+jwt` is short for `application/at+jwt` (RFC 7515 §4.1.9), any case. */
function mediaType(typ: string): string {
  const lower = typ.toLowerCase();
  return lower.includes('/') ? lower : `application/${lower}`;
}

/** The TLS client certificate thumbprint a token is bound to (RFC 8705 §3.1, `cnf.x5t#S256`), or `undefined`. */
export function boundCertificateOf(payload: JWTPayload): string | undefined {
  const cnf = payload.cnf as Record<string, unknown> | undefined;
  const x5t = typeof cnf === 'object' && cnf !== null ? cnf['x5t#S256'] : undefined;
  return typeof x5t === 'string' ? x5t : undefined;
}

/**
 * The DPoP key thumbprint a token is bound to (RFC 9449 §6.1, `cnf.jkt`), or `undefined` for a
 * bearer token. A bound token is only good with a proof by that key: the UserInfo endpoint checks
 * one; introspection and the validator service report the binding (as the `cnf` claim) to the
 * resource that checks it (docs/validators.md, "DPoP-bound tokens").
 */
export function boundKeyOf(payload: JWTPayload): string | undefined {
  const cnf = payload.cnf as { jkt?: unknown } | undefined;
  return typeof cnf === 'object' && cnf !== null && typeof cnf.jkt === 'string' ? cnf.jkt : undefined;
}

function invalid(reason: string): TokenValidationResult {
  return { isError: true, error: `invalid_token: ${reason}`, claims: [] };
}

/** JWT members as type/value pairs: arrays give one claim per element, objects their JSON. */
export function toClaims(payload: Record<string, unknown>): Claim[] {
  const claims: Claim[] = [];
  for (const [type, value] of Object.entries(payload)) {
    if (Array.isArray(value)) for (const v of value) claims.push({ type, value: claimText(v) });
    else claims.push({ type, value: claimText(value) });
  }
  return claims;
}

function claimText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}
