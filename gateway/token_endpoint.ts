import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { OAuthErrors } from '../workers/protocol/oauth_errors.js';
import { Endpoint } from '../workers/protocol/token_task.js';
import { createClientAuthenticationStep, type ClientAuthenticationDeps } from './client_authentication_step.js';
import { createFormEndpoint } from './form_endpoint.js';
import type { WorkerDispatcher } from './worker_dispatcher.js';

export interface TokenEndpointDeps extends ClientAuthenticationDeps {
  /** Read per request so that grant registration can change at run time. */
  grantTypes: () => ReadonlySet<string>;
  dispatcher: WorkerDispatcher;
  /** Told the status of every answer. */
  observe?: (status: number) => void;
}

/**
 * `POST /connect/token` (RFC 6749 §3.2), as a list of the protocol's steps: method, content
 * type, body, parameters, client authentication, grant type supported and allowed; then the
 * grant itself runs in a worker.
 */
export function createTokenEndpoint(deps: TokenEndpointDeps): (res: HttpResponse, req: HttpRequest) => void {
  const authenticateClient = createClientAuthenticationStep(deps);
  return createFormEndpoint(
    OAuthErrors.tokenPostOnly,
    (request) => {
      const client = authenticateClient(request);
      if (client === undefined) return;
      const { exchange, params } = request;
      const grantType = params.grant_type;
      if (grantType === undefined) {
        exchange.sendError(OAuthErrors.missingGrantType);
        return;
      }
      if (!deps.grantTypes().has(grantType)) {
        exchange.sendError(OAuthErrors.unsupportedGrantType);
        return;
      }
      if (!client.grantTypes.has(grantType)) {
        exchange.sendError(OAuthErrors.grantTypeNotAllowed);
        return;
      }
      // Secrets stay on this thread.
      delete params.client_secret;
      deps.dispatcher.submit(exchange, [Endpoint.Token, grantType, client.clientId, params]);
    },
    deps.observe,
  );
}
