import type { GrantHandler } from './grant_handler.js';
import { narrowRequestedGrant } from '../../core/rules/scope_narrowing.js';
import { clientOnlyPolicy } from '../../core/rules/scope_rules.js';
import { signAccessToken, tokenResponse } from './token_issuance.js';

/**
 * RFC 6749 §4.4. The client is its own resource owner: no user, no identity scopes, no refresh
 * token (§4.4.3), and no store access, so it keeps working through a store outage.
 */
export const clientCredentialsGrant: GrantHandler = {
  grantType: 'client_credentials',
  handle(request, services) {
    const { scopes } = narrowRequestedGrant(services.scopes, request.client, request.params, clientOnlyPolicy);
    return tokenResponse(request, signAccessToken(request, services, { scopes }), scopes.scope);
  },
};
