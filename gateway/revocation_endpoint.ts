import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { errorBody } from '../workers/protocol/oauth_errors.js';
import { Endpoint } from '../workers/protocol/token_task.js';
import { createClientAuthenticationStep, type ClientAuthenticationDeps } from './client_authentication_step.js';
import { createFormEndpoint } from './form_endpoint.js';
import type { WorkerDispatcher } from './worker_dispatcher.js';

export interface RevocationEndpointDeps extends ClientAuthenticationDeps {
  dispatcher: WorkerDispatcher;
}

const missingToken = errorBody('invalid_request', 'The token parameter is missing.');

/** `POST /connect/revocation` (RFC 7009), client-authenticated like the token endpoint. */
export function createRevocationEndpoint(deps: RevocationEndpointDeps): (res: HttpResponse, req: HttpRequest) => void {
  const authenticateClient = createClientAuthenticationStep(deps);
  return createFormEndpoint('revocation', (request) => {
    const client = authenticateClient(request);
    if (client === undefined) return;
    const { exchange, params } = request;
    if (params.token === undefined) {
      exchange.sendJson(400, missingToken);
      return;
    }
    delete params.client_secret;
    deps.dispatcher.submit(exchange, [Endpoint.Revocation, 'client', client.clientId, params]);
  });
}
