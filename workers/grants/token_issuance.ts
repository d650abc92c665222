import { buildAccessTokenClaims, type ClaimValue } from '../tokens/access_token.js';
import type { GrantRequest, GrantServices, TokenResponse } from './grant_handler.js';
import type { GrantedScopes } from './scope_rules.js';

/** What a grant decided; the shared last step turns it into tokens. */
export interface TokenGrant {
  scopes: GrantedScopes;
  subject?: string;
  claims?: Readonly<Record<string, ClaimValue>>;
}

/**
 * The step every grant ends with: sign the access token and build the response. Refresh and ID
 * tokens join here as their grants land, so every user-centric grant issues them the same way.
 */
export function issueTokens(request: GrantRequest, services: GrantServices, grant: TokenGrant): TokenResponse {
  const now = Math.floor(services.now() / 1000);
  const input: Parameters<typeof buildAccessTokenClaims>[0] = {
    issuer: services.issuer,
    client: request.client,
    scopes: grant.scopes,
    now,
  };
  if (grant.subject !== undefined) input.subject = grant.subject;
  if (grant.claims !== undefined) input.claims = grant.claims;
  const accessToken = services.signer.sign(buildAccessTokenClaims(input), 'at+jwt');
  return {
    access_token: accessToken,
    token_type: 'Bearer',
    expires_in: request.client.config.accessTokenLifetime,
    scope: grant.scopes.scope,
  };
}
