import { isClientAssertionAlgorithm, jwtBearerAssertionType, type ClientAssertionAlgorithm } from '../../core/client_assertion.js';
import { decodeJsonObject, splitCompactJws } from '../../core/crypto/compact_jws.js';
import type { FormParams } from '../../wire/token_task.js';

/** Clock skew allowed on `exp`, `nbf` and `iat`, in seconds (as the token validator allows). */
export const assertionClockSkewSeconds = 5;

/** Longer assertions are refused unread: no client key makes a signed JWT this long. */
const maxAssertionLength = 16_384;
const maxJtiLength = 256;

/** What the claim checks need, built once at start. */
export interface AssertionRules {
  /** The one `aud` an assertion may carry: this server's issuer identifier (draft-ietf-oauth-rfc7523bis). */
  readonly issuer: string;
  /** The token endpoint URL, accepted as `aud` only from a client that allows it ({@link allowsTokenEndpointAudience}). */
  readonly tokenEndpoint: string;
  /** Whether a client set `allowTokenEndpointAudience` (docs/configuration.md, "Private key JWT clients"). */
  readonly allowsTokenEndpointAudience: (clientId: string) => boolean;
  /**
   * Whether a client's assertions must write `aud` as a string, not an array of one: a `fapi2`
   * client's (FAPI 2.0 §5.3.2.1, "as a string in the aud claim"). Absent: both are taken.
   */
  readonly stringAudienceOnly?: ((clientId: string) => boolean) | undefined;
  /** `exp` may be at most this far ahead (`clientAssertions.maxLifetimeSeconds`). */
  readonly maxLifetimeSeconds: number;
  readonly now: () => number;
}

/** A client assertion whose claims passed, not yet its signature: the worker verifies that. */
export interface ReadAssertion {
  readonly clientId: string;
  readonly jwt: string;
  readonly alg: ClientAssertionAlgorithm;
  readonly kid: string | undefined;
  readonly jti: string;
  readonly exp: number;
}

export type AssertionReading =
  | { readonly ok: true; readonly assertion: ReadAssertion }
  /** `reason` is for the log only; `clientId` the id the assertion or the form claimed, if any. */
  | { readonly ok: false; readonly reason: string; readonly clientId: string | undefined };

/** Whether the request tries `private_key_jwt` at all (either parameter counts). */
export function carriesClientAssertion(params: FormParams): boolean {
  return params.client_assertion !== undefined || params.client_assertion_type !== undefined;
}

/**
 * The client an assertion names (its `sub`, which must equal `iss`), read without any check, or
 * `undefined`: only to look a store-kept client up before {@link readClientAssertion} checks it all.
 */
export function assertionSubject(jwt: string): string | undefined {
  if (jwt.length > maxAssertionLength) return undefined;
  const parts = splitCompactJws(jwt);
  const sub = parts === undefined ? undefined : decodeJsonObject(parts.payload)?.sub;
  return typeof sub === 'string' && sub.length > 0 ? sub : undefined;
}

/**
 * Reads a `private_key_jwt` assertion (RFC 7523 §2.2, §3; OpenID Connect Core §9) and checks
 * everything but its signature and the single use of its `jti`: those need the key and the
 * store, and run in the worker (docs/architecture.md, "Client assertions"). The claims checked
 * here are those of the exact bytes the worker verifies, so a forged payload fails there.
 *
 * Checks: the assertion type; a compact JWS with an allowed asymmetric `alg` and no `crit`;
 * `iss` = `sub` = the client id (and = `client_id` when the form sends it); `aud` exactly the
 * issuer; `exp` present, not past and at most `maxLifetimeSeconds` ahead; `nbf` and `iat` not in
 * the future; `jti` present.
 */
export function readClientAssertion(params: FormParams, rules: AssertionRules): AssertionReading {
  const formClientId = params.client_id;
  const refuse = (reason: string, clientId: string | undefined = formClientId): AssertionReading => ({ ok: false, reason, clientId });
  if (params.client_assertion_type !== jwtBearerAssertionType) return refuse('client assertion: unsupported client_assertion_type');
  const jwt = params.client_assertion;
  if (jwt === undefined || jwt.length === 0 || jwt.length > maxAssertionLength) return refuse('client assertion: missing or oversized');
  const parts = splitCompactJws(jwt);
  if (parts === undefined) return refuse('client assertion: not a compact JWS');
  const header = decodeJsonObject(parts.header);
  const claims = decodeJsonObject(parts.payload);
  if (header === undefined || claims === undefined) return refuse('client assertion: header or claims are not a JSON object');

  const iss = claims.iss;
  const clientId = typeof iss === 'string' && iss.length > 0 ? iss : formClientId;
  if (typeof iss !== 'string' || iss.length === 0 || claims.sub !== iss)
    return refuse('client assertion: iss and sub must both be the client id', clientId);
  if (formClientId !== undefined && formClientId !== iss) return refuse('client assertion: iss differs from client_id', clientId);
  const alg = header.alg;
  if (!isClientAssertionAlgorithm(alg)) return refuse('client assertion: algorithm not allowed', clientId);
  // RFC 7515 §4.1.11: an extension we do not understand must not be ignored.
  if (header.crit !== undefined) return refuse('client assertion: crit header not supported', clientId);
  const kid = header.kid;
  if (kid !== undefined && typeof kid !== 'string') return refuse('client assertion: kid is not a string', clientId);
  if (!namesThisServer(claims.aud, iss, rules)) return refuse('client assertion: aud is not the issuer alone', clientId);

  const now = rules.now() / 1000;
  const exp = claims.exp;
  if (typeof exp !== 'number' || !Number.isFinite(exp)) return refuse('client assertion: exp missing', clientId);
  if (exp <= now - assertionClockSkewSeconds) return refuse('client assertion: expired', clientId);
  if (exp - now > rules.maxLifetimeSeconds + assertionClockSkewSeconds) return refuse('client assertion: exp too far ahead', clientId);
  if (!notInFuture(claims.nbf, now) || !notInFuture(claims.iat, now)) return refuse('client assertion: nbf or iat in the future', clientId);
  const jti = claims.jti;
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > maxJtiLength) return refuse('client assertion: jti missing', clientId);
  return { ok: true, assertion: { clientId: iss, jwt, alg, kid, jti, exp } };
}

/**
 * draft-ietf-oauth-rfc7523bis §4 (updating RFC 7523 §3 item 3): the issuer identifier must be the
 * **sole** audience. RFC 7523 let any value naming the server pass, the token endpoint URL
 * included, or an array with other values beside it: a client that takes a token endpoint URL
 * from a malicious server's metadata then signs an assertion that server can replay here (the
 * audience injection the draft answers). RFC 7519 §4.1.3 writes one audience as a string or an
 * array of one; both say the same and carry no second audience, so both are accepted. The token
 * endpoint URL only from a client that opted in (`allowTokenEndpointAudience`), for clients not
 * yet updated; never another endpoint's URL, never beside another value. A `fapi2` client's only
 * as a string (FAPI 2.0 §5.3.2.1).
 */
function namesThisServer(aud: unknown, clientId: string, rules: AssertionRules): boolean {
  if (Array.isArray(aud) && rules.stringAudienceOnly?.(clientId) === true) return false;
  const sole = typeof aud === 'string' ? aud : Array.isArray(aud) && aud.length === 1 ? (aud[0] as unknown) : undefined;
  if (sole === rules.issuer) return true;
  return sole === rules.tokenEndpoint && rules.allowsTokenEndpointAudience(clientId);
}

function notInFuture(time: unknown, now: number): boolean {
  if (time === undefined) return true;
  return typeof time === 'number' && time <= now + assertionClockSkewSeconds;
}
