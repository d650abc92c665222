import type { RegisteredClient } from '../../workers/protocol/client_model.js';
import type { FormRequest } from '../http/form_request.js';
import type { ClientAuthenticator } from './authenticator.js';
import { CallerGate } from './caller_gate.js';
import type { ClientAuthThrottle } from './throttle.js';

/** What client authentication is built from, at start. */
export interface ClientAuthenticationDeps {
  issuer: string;
  authenticator: ClientAuthenticator;
  throttle: ClientAuthThrottle;
}

/** Client authentication as an endpoint holds it, built once per endpoint at start. */
export interface ClientAuthentication {
  readonly authenticator: ClientAuthenticator;
  readonly gate: CallerGate;
}

export function createClientAuthentication(deps: ClientAuthenticationDeps): ClientAuthentication {
  return { authenticator: deps.authenticator, gate: new CallerGate(deps.throttle, deps.issuer) };
}

/**
 * The client authentication step of every endpoint that needs it (RFC 6749 §2.3, §3.2.1): one
 * method only, throttled per client, 401 with a Basic challenge when the Authorization header
 * was used (RFC 6749 §5.2), 400 without one when that header is malformed Basic. Answers the request itself and returns `undefined` when
 * authentication fails.
 */
export function authenticateClient(
  authentication: ClientAuthentication,
  { exchange, params, authorization }: FormRequest,
): RegisteredClient | undefined {
  const { authenticator, gate } = authentication;
  const auth = authenticator.authenticate(authorization, params);
  const clientId = auth.ok ? auth.client.clientId : auth.clientId;
  // For the request's log line, metrics and audit events (gateway/endpoint_outcomes.ts).
  exchange.clientId = clientId;
  if (gate.refuseBlocked(exchange, clientId)) {
    exchange.authFailure = 'blocked';
    return undefined;
  }
  if (auth.ok) return auth.client;
  if (auth.failure === 'multiple_methods') {
    exchange.authFailure = 'multiple_methods';
    gate.refuseMultipleMethods(exchange, auth.clientId);
  } else if (auth.failure === 'malformed_basic') {
    exchange.authFailure = 'malformed';
    gate.refuseMalformed(exchange);
  } else {
    exchange.authFailure = 'failed';
    gate.refuseFailed(exchange, auth.clientId, auth.usedAuthorizationHeader);
  }
  return undefined;
}
