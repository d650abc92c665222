/**
 * What a scenario's answers must be: the expectation the load generator applies to every
 * response, and the deep check (`verify`) of one full response before and after each run.
 */
import type { Expectation } from '../load/load_generator.js';
import type { BenchAlgorithm } from '../support/keys.js';

/** The expectation every successful token response meets. */
export const tokenResponse: Expectation = { status: 200, bodyPrefix: '{"access_token":"' };

/**
 * What a token response must contain besides the access token: `true` a member must be there,
 * `false` it must not. In a mix this is also what tells the kinds of answer apart.
 */
export interface TokenMembers {
  refreshToken?: boolean;
  idToken?: boolean;
  /** Further text the body must contain, e.g. `"issued_token_type":"…"`. */
  contains?: readonly string[];
}

export function tokenExpectation(members: TokenMembers): Expectation {
  const contains: string[] = [...(members.contains ?? [])];
  const lacks: string[] = [];
  if (members.refreshToken !== undefined) (members.refreshToken ? contains : lacks).push('"refresh_token":"');
  if (members.idToken !== undefined) (members.idToken ? contains : lacks).push('"id_token":"');
  return { ...tokenResponse, ...(contains.length > 0 ? { contains } : {}), ...(lacks.length > 0 ? { lacks } : {}) };
}

export function parseJson(body: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(body);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The header and payload of a compact JWS, or null. */
export function decodeJwt(token: string): { header: Record<string, unknown>; payload: Record<string, unknown> } | null {
  const [header, payload, signature] = token.split('.');
  if (header === undefined || payload === undefined || signature === undefined) return null;
  const h = parseJson(Buffer.from(header, 'base64url').toString('utf8'));
  const p = parseJson(Buffer.from(payload, 'base64url').toString('utf8'));
  return h === null || p === null ? null : { header: h, payload: p };
}

export interface AccessTokenChecks extends TokenMembers {
  /** More checks of the access token's payload: returns what is wrong, or null. */
  claims?: (payload: Record<string, unknown>) => string | null;
}

/** An access-token claims check: the JWT's `sub` is `subject`. */
export const subjectIs =
  (subject: string) =>
  (payload: Record<string, unknown>): string | null =>
    payload.sub === subject ? null : `JWT sub ${String(payload.sub)}, expected ${subject}`;

/**
 * A 200 token response (RFC 6749 §5.1) whose access token is an RFC 9068 JWT signed with `alg`
 * and carrying `scope`; with `checks`, also the refresh and ID tokens and more claims.
 */
export function verifyAccessTokenResponse(alg: BenchAlgorithm, scope: string, checks: AccessTokenChecks = {}) {
  return (status: number, body: string): string | null => {
    if (status !== 200) return `status ${status}: ${body.slice(0, 200)}`;
    const json = parseJson(body);
    if (json === null) return `not a JSON object: ${body.slice(0, 200)}`;
    if (typeof json.access_token !== 'string') return 'no access_token';
    if (typeof json.token_type !== 'string' || json.token_type.toLowerCase() !== 'bearer') return `token_type ${String(json.token_type)}`;
    const jwt = decodeJwt(json.access_token);
    if (jwt === null) return 'access_token is not a compact JWS';
    if (jwt.header.alg !== alg) return `JWT alg ${String(jwt.header.alg)}, expected ${alg}`;
    if (jwt.header.typ !== 'at+jwt') return `JWT typ ${String(jwt.header.typ)}, expected at+jwt`;
    if (jwt.payload.scope !== scope) return `JWT scope ${String(jwt.payload.scope)}, expected ${scope}`;
    const more = checks.claims?.(jwt.payload) ?? null;
    if (more !== null) return more;
    if (checks.refreshToken === true && (typeof json.refresh_token !== 'string' || json.refresh_token.length < 32))
      return 'no refresh_token';
    if (checks.refreshToken === false && 'refresh_token' in json) return 'an unexpected refresh_token';
    if (checks.idToken === true) {
      if (typeof json.id_token !== 'string') return 'no id_token';
      const id = decodeJwt(json.id_token);
      if (id === null || id.header.alg !== alg) return `id_token is not a JWS signed ${alg}`;
    }
    if (checks.idToken === false && 'id_token' in json) return 'an unexpected id_token';
    for (const text of checks.contains ?? []) if (!body.includes(text)) return `the body lacks ${text}`;
    return null;
  };
}

/** A 200 JSON object with `member`. */
export function verifyJsonMember(member: string) {
  return (status: number, body: string): string | null => {
    if (status !== 200) return `status ${status}: ${body.slice(0, 200)}`;
    const json = parseJson(body);
    if (json === null) return `not a JSON object: ${body.slice(0, 200)}`;
    return member in json ? null : `no "${member}" member`;
  };
}
