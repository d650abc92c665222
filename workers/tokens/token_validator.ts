import { createLocalJWKSet, jwtVerify, type JWTPayload } from 'jose';
import type { Claim, TokenValidationResult, TokenValidator } from '../protocol/validator_api.js';
import type { Store } from '../store/store.js';
import { publicJwk, type SigningKeyMaterial } from '../protocol/signing_key.js';
import { validatedTokens } from './validated_tokens.js';

/** Seconds of clock skew tolerated on `exp`/`nbf`/`iat` between gateway instances. */
export const clockToleranceSeconds = 5;

// An access token longer than this is not ours; refuse before parsing.
const maxTokenLength = 16 * 1024;

/** A revoked `jti` lives in the store until the token would have expired (docs/storage.md, "Records"). */
export function revokedJtiKey(jti: string) {
  return { kind: 'jti', id: jti } as const;
}

/**
 * Validates this service's own JWT access tokens: jose over the published keys (so retired keys
 * still verify), only the configured asymmetric algorithms (no `none`, no HS256 with a public
 * key), `typ: at+jwt` (so ID tokens are refused), `iss`, time claims, then the `jti` deny list.
 */
export class AccessTokenValidator implements TokenValidator {
  private keySet: ReturnType<typeof createLocalJWKSet>;
  private algorithms: string[];

  constructor(
    private readonly options: {
      issuer: string;
      keys: readonly SigningKeyMaterial[];
      store: Store;
      now: () => number;
    },
  ) {
    this.keySet = createLocalJWKSet({ keys: options.keys.map(publicJwk) });
    this.algorithms = [...new Set(options.keys.map((k) => k.alg))];
  }

  /** Verifies with these keys from now on: the published set changed (a rotation, a reload). */
  useKeys(keys: readonly SigningKeyMaterial[]): void {
    this.keySet = createLocalJWKSet({ keys: keys.map(publicJwk) });
    this.algorithms = [...new Set(keys.map((k) => k.alg))];
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
  ): Promise<{ ok: true; payload: JWTPayload } | { ok: false; reason: string }> {
    if (typeof token !== 'string' || token.length === 0 || token.length > maxTokenLength) return { ok: false, reason: 'malformed token' };
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.keySet, {
        issuer: this.options.issuer,
        typ: 'at+jwt',
        algorithms: this.algorithms,
        clockTolerance: options.checkTime === false ? Number.MAX_SAFE_INTEGER : clockToleranceSeconds,
        currentDate: new Date(this.options.now()),
        requiredClaims: ['exp', 'iat', 'jti', 'sub', 'client_id'],
      }));
    } catch (err) {
      return { ok: false, reason: (err as { code?: string }).code ?? 'invalid token' };
    }
    // jose checks exp and nbf but not an iat in the future: a token "issued" later than now was not
    // issued by this clock (RFC 7519 §4.1.6; a forged or mis-clocked token), so it is refused.
    if (options.checkTime !== false && (payload.iat as number) > this.options.now() / 1000 + clockToleranceSeconds) {
      return { ok: false, reason: 'iat in the future' };
    }
    // A store failure propagates: the caller answers 503 rather than trusting an unchecked token.
    if ((await this.options.store.get(revokedJtiKey(payload.jti as string))) !== null) return { ok: false, reason: 'token revoked' };
    return { ok: true, payload };
  }
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
