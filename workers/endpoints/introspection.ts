import type { JWTPayload } from 'jose';
import type { Store } from '../../core/store/store.js';
import { parseRefreshHandle } from '../../core/records/refresh_token_handle.js';
import type { RefreshTokenRecord } from '../tokens/refresh_token_record.js';
import { boundKeyOf, type AccessTokenValidator } from '../tokens/token_validator.js';
import { OAuthError, OAuthErrors } from '../../core/oauth_errors.js';
import type { FormParams } from '../../wire/token_task.js';
import type { IntrospectionThrottle } from '../../core/throttles.js';

export const inactive = '{"active":false}';

export interface IntrospectionServices {
  readonly tokenValidator: AccessTokenValidator;
  readonly store: Store;
  readonly now: () => number;
  readonly introspectionThrottle: IntrospectionThrottle;
  /** Each API resource's scopes: what an API sees of a token's `scope` when it introspects. */
  readonly resourceScopes: ReadonlyMap<string, ReadonlySet<string>>;
}

/**
 * RFC 7662 §2.2: a token the caller may see is described; everything else (expired, revoked,
 * consumed, unknown, garbage, another caller's) is exactly `{"active":false}`. An API resource
 * sees access tokens whose `aud` names it; a client sees its own access and refresh tokens.
 */
export async function introspect(
  callerKind: string,
  callerId: string,
  params: FormParams,
  services: IntrospectionServices,
): Promise<string> {
  const caller = `${callerKind}\u0000${callerId}`;
  const { introspectionThrottle } = services;
  const blocked = introspectionThrottle.retryAfterSeconds(caller);
  if (blocked > 0) throw tooManyInactive(blocked);
  const token = params.token ?? '';
  // The hint picks which kind to try first (RFC 7662 §2.1); both are tried either way.
  const refreshFirst = params.token_type_hint === 'refresh_token';
  const attempts = refreshFirst ? [introspectRefreshToken, introspectAccessToken] : [introspectAccessToken, introspectRefreshToken];
  for (const attempt of attempts) {
    const body = await attempt(token, callerKind, callerId, services);
    if (body !== undefined) return body;
  }
  // The answer that crosses the limit is still given; the ones after it are 429.
  await introspectionThrottle.recordInactive(caller);
  return inactive;
}

function tooManyInactive(retryAfter: number): OAuthError {
  return new OAuthError(OAuthErrors.tooManyInactiveIntrospections, { retryAfter });
}

async function introspectAccessToken(
  token: string,
  callerKind: string,
  callerId: string,
  services: IntrospectionServices,
): Promise<string | undefined> {
  if (token.split('.').length !== 3) return undefined;
  const verified = await services.tokenValidator.verify(token);
  if (!verified.ok || !visibleTo(verified.payload, callerKind, callerId)) return undefined;
  const payload = callerKind === 'resource' ? narrowScope(verified.payload, services.resourceScopes.get(callerId)) : verified.payload;
  // RFC 9449 §6.2: a bound token is of type DPoP, and its `cnf` (in the payload) names the key.
  return JSON.stringify({ active: true, token_type: boundKeyOf(payload) === undefined ? 'Bearer' : 'DPoP', ...payload });
}

/**
 * An API learns of a token only the scopes that are its own: a token for two APIs must not tell
 * one what the user granted the other (IdentityServer answers the same way).
 */
function narrowScope(payload: JWTPayload, own: ReadonlySet<string> | undefined): JWTPayload {
  if (typeof payload.scope !== 'string') return payload;
  const scope = payload.scope
    .split(' ')
    .filter((s) => own?.has(s) === true)
    .join(' ');
  return { ...payload, scope };
}

async function introspectRefreshToken(
  token: string,
  callerKind: string,
  callerId: string,
  services: IntrospectionServices,
): Promise<string | undefined> {
  const handle = parseRefreshHandle(token);
  if (handle === undefined || callerKind !== 'client') return undefined;
  const record = await services.store.get<RefreshTokenRecord>(handle.key);
  const now = services.now();
  if (record === null || record.clientId !== callerId || record.expiresAt <= now || record.absoluteExpiresAt <= now) return undefined;
  return JSON.stringify({
    active: true,
    token_type: 'refresh_token',
    scope: record.scopes.join(' '),
    client_id: record.clientId,
    sub: record.subject,
    iat: Math.floor(record.createdAt / 1000),
    exp: Math.floor(record.expiresAt / 1000),
    ...refreshTokenCnf(record),
  });
}

/** The binding of a refresh token (RFC 9449 §6.2, RFC 8705 §3.2), as `cnf` names it. */
function refreshTokenCnf(record: RefreshTokenRecord): { cnf?: Record<string, string> } {
  if (record.jkt === undefined && record.x5t === undefined) return {};
  const cnf: Record<string, string> = {};
  if (record.jkt !== undefined) cnf.jkt = record.jkt;
  if (record.x5t !== undefined) cnf['x5t#S256'] = record.x5t;
  return { cnf };
}

function visibleTo(payload: JWTPayload, callerKind: string, callerId: string): boolean {
  if (callerKind === 'client') return payload.client_id === callerId;
  const aud = payload.aud;
  return aud === callerId || (Array.isArray(aud) && aud.includes(callerId));
}
