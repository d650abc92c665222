import type { RegisteredClient } from '../workers/protocol/client_model.js';
import { OAuthErrors } from '../workers/protocol/oauth_errors.js';
import type { ClientAuthenticator } from './client_auth.js';
import type { ClientAuthThrottle } from './client_auth_throttle.js';
import type { FormRequest } from './form_endpoint.js';
import type { Exchange } from './http/exchange.js';

export interface ClientAuthenticationDeps {
  issuer: string;
  authenticator: ClientAuthenticator;
  throttle: ClientAuthThrottle;
}

/** The throttle and the refusals every caller authentication shares (clients, API resources). */
export interface CallerGate {
  /**
   * Answers 429 and returns true when `id` is blocked; a blocked caller is refused even with the
   * right secret, or the block would limit nothing.
   */
  refuseBlocked(exchange: Exchange, id: string | undefined): boolean;
  /** Counts a failed authentication of `id` and answers 401, with a Basic challenge when the Authorization header was used (RFC 6749 §5.2). */
  refuseFailed(exchange: Exchange, id: string | undefined, usedAuthorizationHeader: boolean): void;
}

export function createCallerGate(deps: ClientAuthenticationDeps): CallerGate {
  const challenge = { wwwAuthenticate: `Basic realm="${deps.issuer}"` };
  return {
    refuseBlocked(exchange, id) {
      const throttled = deps.throttle.stateOf(id);
      if (!throttled.blocked) return false;
      exchange.sendError(OAuthErrors.tooManyFailedAttempts, { retryAfter: throttled.retryAfterSeconds });
      return true;
    },
    refuseFailed(exchange, id, usedAuthorizationHeader) {
      deps.throttle.recordFailure(id);
      exchange.sendError(OAuthErrors.invalidClient, usedAuthorizationHeader ? challenge : undefined);
    },
  };
}

/**
 * Client authentication as every endpoint that needs it does it (SPEC §4): one method only,
 * throttled per client, 401 with a Basic challenge when the Authorization header was used
 * (RFC 6749 §5.2). Answers the request itself and returns `undefined` when authentication fails.
 */
export function createClientAuthenticationStep(deps: ClientAuthenticationDeps): (request: FormRequest) => RegisteredClient | undefined {
  const gate = createCallerGate(deps);
  return ({ exchange, params, authorization }) => {
    const auth = deps.authenticator.authenticate(authorization, params);
    if (gate.refuseBlocked(exchange, auth.ok ? auth.client.clientId : auth.clientId)) return undefined;
    if (auth.ok) return auth.client;
    if (auth.failure !== 'multiple_methods') {
      gate.refuseFailed(exchange, auth.clientId, auth.usedAuthorizationHeader);
      return undefined;
    }
    deps.throttle.recordFailure(auth.clientId);
    exchange.sendError(OAuthErrors.multipleClientAuthMethods);
    return undefined;
  };
}
