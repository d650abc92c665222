import type { GrantHandler } from './grant_handler.js';
import { requestedResources, selectResources } from './resource_indicators.js';
import { clientOnlyPolicy } from './scope_rules.js';
import { signAccessToken, tokenResponse } from './token_issuance.js';

/**
 * RFC 6749 §4.4. The client is its own resource owner: no user, no identity scopes, no refresh
 * token (§4.4.3), and no store access, so it keeps working through a store outage.
 */
export const clientCredentialsGrant: GrantHandler = {
  grantType: 'client_credentials',
  handle(request, services) {
    const granted = services.scopes.resolve(request.client, request.params.scope, clientOnlyPolicy);
    const scopes = selectResources(services.scopes, granted, requestedResources(request.params), undefined);
    return tokenResponse(request, signAccessToken(request, services, { scopes }), scopes.scope);
  },
};
