/**
 * Request objects (RFC 9101) on the gateway: the claims checked and turned into the request's
 * parameters, the client's candidate keys picked. The signature and the `jti` are checked in a
 * worker (core/request_object.ts), as a client assertion's are.
 */
import { decodeJsonObject, splitCompactJws } from '../../core/crypto/compact_jws.js';
import type { RegisteredClient } from '../../core/client_model.js';
import { isClientAssertionAlgorithm } from '../../core/client_assertion.js';
import type { RequestObjectCheck } from '../../core/request_object.js';
import type { FormParams } from '../../wire/token_task.js';
import { ClientKeys } from '../client_authentication/client_keys.js';

/** Clock skew allowed on `exp` and `nbf`, in seconds (as for client assertions). */
const clockSkewSeconds = 5;
/**
 * The longest a request object may live, and the oldest its `nbf` may be: FAPI 2.0 Message
 * Signing §5.3.1 asks for at most 60 minutes between `nbf` and `exp`.
 */
export const requestObjectMaxLifetimeSeconds = 3600;
const maxRequestObjectLength = 32_768;
const maxJtiLength = 256;
/** RFC 9101 §10.8: the media type a request object should name; a plain JWT is accepted too. */
const acceptedTypes = new Set(['oauth-authz-req+jwt', 'application/oauth-authz-req+jwt', 'jwt']);
/** The claims that make a request object a JWT and are no authorization parameter (RFC 7519 §4.1). */
const jwtClaims = new Set(['iss', 'aud', 'exp', 'nbf', 'iat', 'jti', 'sub']);

export interface RequestObjectRules {
  readonly issuer: string;
  readonly clientKeys: ClientKeys | undefined;
  readonly now: () => number;
}

export type PreparedRequestObject =
  | { readonly ok: true; readonly check: RequestObjectCheck; readonly params: FormParams }
  /** `reason` is for the log only. */
  | { readonly ok: false; readonly reason: string };

/**
 * Reads a request object sent by `client` (the `client_id` beside it, RFC 9101 §5) and checks
 * everything but its signature and the single use of its `jti`: an allowed asymmetric `alg` (never
 * `none`, never HMAC), no `crit`, `typ` if any `oauth-authz-req+jwt`, `iss` the client,
 * `client_id` (if any) the client, `aud` this issuer alone, `exp` present, not past, at most an
 * hour ahead, `nbf` if any not in the future nor more than an hour old; a `response_type` outside
 * must be the one inside (OIDC Core §6.1). The parameters are then the request object's alone
 * (RFC 9101 §6.3), with the `client_id`. Never rejects.
 */
export async function prepareRequestObject(
  jwt: string,
  client: RegisteredClient,
  outer: FormParams,
  rules: RequestObjectRules,
): Promise<PreparedRequestObject> {
  const refuse = (reason: string): PreparedRequestObject => ({ ok: false, reason: `request object: ${reason}` });
  if (jwt.length > maxRequestObjectLength) return refuse('oversized');
  const parts = splitCompactJws(jwt);
  // Five parts would be an encrypted request object (RFC 9101 §6.1), which Tessera does not take.
  if (parts === undefined) return refuse('not a compact JWS');
  const header = decodeJsonObject(parts.header);
  const claims = decodeJsonObject(parts.payload);
  if (header === undefined || claims === undefined) return refuse('header or claims are not a JSON object');
  const alg = header.alg;
  if (!isClientAssertionAlgorithm(alg)) return refuse('algorithm not allowed');
  if (header.crit !== undefined) return refuse('crit header not supported');
  const typ = header.typ;
  if (typ !== undefined && (typeof typ !== 'string' || !acceptedTypes.has(typ.toLowerCase()))) return refuse('typ');
  const kid = header.kid;
  if (kid !== undefined && typeof kid !== 'string') return refuse('kid is not a string');

  const clientId = client.clientId;
  if (claims.iss !== clientId) return refuse('iss is not the client');
  if (claims.client_id !== undefined && claims.client_id !== clientId) return refuse('client_id differs');
  const aud = claims.aud;
  const sole = typeof aud === 'string' ? aud : Array.isArray(aud) && aud.length === 1 ? (aud[0] as unknown) : undefined;
  if (sole !== rules.issuer) return refuse('aud is not the issuer');
  const now = rules.now() / 1000;
  const exp = claims.exp;
  if (typeof exp !== 'number' || !Number.isFinite(exp)) return refuse('exp missing');
  if (exp <= now - clockSkewSeconds) return refuse('expired');
  if (exp - now > requestObjectMaxLifetimeSeconds + clockSkewSeconds) return refuse('exp too far ahead');
  const nbf = claims.nbf;
  if (nbf !== undefined) {
    if (typeof nbf !== 'number' || nbf > now + clockSkewSeconds) return refuse('nbf in the future');
    if (now - nbf > requestObjectMaxLifetimeSeconds + clockSkewSeconds) return refuse('nbf too old');
  }
  const jti = claims.jti;
  if (jti !== undefined && (typeof jti !== 'string' || jti.length === 0 || jti.length > maxJtiLength)) return refuse('jti malformed');
  if (outer.response_type !== undefined && claims.response_type !== outer.response_type) return refuse('response_type differs');

  if (!ClientKeys.usesKeys(client) || rules.clientKeys === undefined) return refuse('the client has no keys');
  const keys = await rules.clientKeys.candidates(client, alg, kid);
  if (keys.length === 0) return refuse('no client key fits');
  const params = Object.create(null) as FormParams;
  for (const [name, value] of Object.entries(claims)) {
    if (jwtClaims.has(name)) continue;
    const text = parameterText(name, value);
    if (text === undefined) return refuse(`claim ${name} is not a parameter value`);
    if (text.length > 0) params[name] = text;
  }
  params.client_id = clientId;
  return { ok: true, check: { jwt, alg, keys, jti, exp }, params };
}

/**
 * A claim as the form parameter it stands for (OIDC Core §6.1: JSON values of the parameters):
 * strings as they are, numbers (`max_age`) as decimals, `resource` arrays (RFC 8707 §2) joined
 * as the form parser joins repeats, other objects (`claims`) as their JSON.
 */
function parameterText(name: string, value: unknown): string | undefined {
  if (typeof value === 'string') return name === 'resource' ? value.replaceAll(' ', '\t') : value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (name === 'resource' && Array.isArray(value) && value.every((v) => typeof v === 'string')) {
    return (value as string[]).map((v) => v.replaceAll(' ', '\t')).join(' ');
  }
  if (typeof value === 'object' && value !== null) return JSON.stringify(value);
  return undefined;
}
