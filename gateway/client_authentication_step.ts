import type { RegisteredClient } from '../workers/protocol/client_model.js';
import { errorBody } from '../workers/protocol/oauth_errors.js';
import type { ClientAuthenticator } from './client_auth.js';
import type { ClientAuthThrottle } from './client_auth_throttle.js';
import type { FormRequest } from './form_endpoint.js';

export interface ClientAuthenticationDeps {
  issuer: string;
  authenticator: ClientAuthenticator;
  throttle: ClientAuthThrottle;
}

const bodies = {
  multipleMethods: errorBody('invalid_request', 'The request uses more than one client authentication method.'),
  invalidClient: errorBody('invalid_client', 'Client authentication failed.'),
  tooManyFailures: errorBody('temporarily_unavailable', 'Too many failed attempts. Retry later.'),
} as const;

/**
 * Client authentication as every endpoint that needs it does it (SPEC §4): one method only,
 * throttled per client, 401 with a Basic challenge when the Authorization header was used
 * (RFC 6749 §5.2). Answers the request itself and returns `undefined` when authentication fails.
 */
export function createClientAuthenticationStep(deps: ClientAuthenticationDeps): (request: FormRequest) => RegisteredClient | undefined {
  const challenge = { wwwAuthenticate: `Basic realm="${deps.issuer}"` };
  return ({ exchange, params, authorization }) => {
    const auth = deps.authenticator.authenticate(authorization, params);
    // A blocked client is refused even with the right secret, or the block would limit nothing.
    const throttled = deps.throttle.stateOf(auth.ok ? auth.client.clientId : auth.clientId);
    if (throttled.blocked) {
      exchange.sendJson(429, bodies.tooManyFailures, { retryAfter: throttled.retryAfterSeconds });
      return undefined;
    }
    if (auth.ok) return auth.client;
    deps.throttle.recordFailure(auth.clientId);
    if (auth.failure === 'multiple_methods') exchange.sendJson(400, bodies.multipleMethods);
    else exchange.sendJson(401, bodies.invalidClient, auth.usedAuthorizationHeader ? challenge : undefined);
    return undefined;
  };
}
