import { buildAccessTokenClaims, type ClaimValue } from '../tokens/access_token.js';
import { newFamilyId, newRefreshHandle } from '../tokens/refresh_token_handle.js';
import { refreshExpiry, type RefreshTokenRecord } from '../tokens/refresh_token_record.js';
import { recordIssuedAccessToken, type IssuedAccessToken } from '../tokens/token_revocation.js';
import type { GrantRequest, GrantServices, TokenResponse } from './grant_handler.js';
import type { GrantedScopes } from './scope_rules.js';

/** What a grant decided; the shared last step turns it into tokens. */
export interface TokenGrant {
  scopes: GrantedScopes;
  subject?: string;
  claims?: Readonly<Record<string, ClaimValue>>;
}

export interface SignedAccessToken extends IssuedAccessToken {
  readonly token: string;
}

/** Signs the RFC 9068 access token of a grant. */
export function signAccessToken(request: GrantRequest, services: GrantServices, grant: TokenGrant, nowMs = services.now()): SignedAccessToken {
  const input: Parameters<typeof buildAccessTokenClaims>[0] = {
    issuer: services.issuer,
    client: request.client,
    scopes: grant.scopes,
    now: Math.floor(nowMs / 1000),
  };
  if (grant.subject !== undefined) input.subject = grant.subject;
  if (grant.claims !== undefined) input.claims = grant.claims;
  const claims = buildAccessTokenClaims(input);
  return { token: services.signer.sign(claims, 'at+jwt'), jti: claims.jti as string, exp: claims.exp as number };
}

export function tokenResponse(request: GrantRequest, accessToken: SignedAccessToken, scope: string, refreshToken?: string): TokenResponse {
  const response: TokenResponse = {
    access_token: accessToken.token,
    token_type: 'Bearer',
    expires_in: request.client.config.accessTokenLifetime,
    scope,
  };
  if (refreshToken !== undefined) response.refresh_token = refreshToken;
  return response;
}

/**
 * The step every grant ends with: sign the access token and, for a user who was granted
 * `offline_access` by a client allowed it, start a refresh-token family. The refresh token is
 * stored before anything is returned, so no token is issued whose state was not written.
 */
export async function issueTokens(request: GrantRequest, services: GrantServices, grant: TokenGrant): Promise<TokenResponse> {
  const now = services.now();
  const accessToken = signAccessToken(request, services, grant, now);
  const client = request.client.config;
  if (grant.subject === undefined || !grant.scopes.offlineAccess || !client.allowOfflineAccess) {
    return tokenResponse(request, accessToken, grant.scopes.scope);
  }
  const family = newFamilyId();
  const refresh = newRefreshHandle(family);
  const absoluteExpiresAt = now + client.absoluteRefreshTokenLifetime * 1000;
  const record: RefreshTokenRecord = {
    v: 1,
    clientId: request.client.clientId,
    subject: grant.subject,
    scopes: grant.scopes.scopes,
    claims: grant.claims ?? {},
    family,
    createdAt: now,
    absoluteExpiresAt,
    expiresAt: refreshExpiry(client, absoluteExpiresAt, now),
  };
  await recordIssuedAccessToken(services.store, family, accessToken, now);
  await services.store.set(refresh.key, record, record.expiresAt - now);
  return tokenResponse(request, accessToken, grant.scopes.scope, refresh.handle);
}
