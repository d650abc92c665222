import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { OAuthErrors } from '../workers/protocol/oauth_errors.js';
import { Endpoint } from '../workers/protocol/token_task.js';
import { createClientAuthenticationStep, type ClientAuthenticationDeps } from './client_authentication_step.js';
import { createFormEndpoint } from './form_endpoint.js';
import type { WorkerDispatcher } from './worker_dispatcher.js';

export interface RevocationEndpointDeps extends ClientAuthenticationDeps {
  dispatcher: WorkerDispatcher;
}

/** `POST /connect/revocation` (RFC 7009), client-authenticated like the token endpoint. */
export function createRevocationEndpoint(deps: RevocationEndpointDeps): (res: HttpResponse, req: HttpRequest) => void {
  const authenticateClient = createClientAuthenticationStep(deps);
  return createFormEndpoint(OAuthErrors.revocationPostOnly, (request) => {
    const client = authenticateClient(request);
    if (client === undefined) return;
    const { exchange, params } = request;
    if (params.token === undefined) {
      exchange.sendError(OAuthErrors.missingToken);
      return;
    }
    delete params.client_secret;
    deps.dispatcher.submit(exchange, [Endpoint.Revocation, 'client', client.clientId, params]);
  });
}
