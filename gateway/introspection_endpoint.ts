import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { TesseraConfig } from './config/schema.js';
import { decodeSecrets, type StoredSecret } from '../workers/protocol/client_model.js';
import { OAuthErrors } from '../workers/protocol/oauth_errors.js';
import { Endpoint } from '../workers/protocol/token_task.js';
import { matchesStoredSecret } from './client_auth.js';
import { createCallerGate, createClientAuthenticationStep, type ClientAuthenticationDeps } from './client_authentication_step.js';
import { createFormEndpoint } from './form_endpoint.js';
import { decodeBasicAuthorization } from './http/basic_auth.js';
import type { WorkerDispatcher } from './worker_dispatcher.js';

export interface IntrospectionEndpointDeps extends ClientAuthenticationDeps {
  apiResources: TesseraConfig['apiResources'];
  dispatcher: WorkerDispatcher;
  now?: () => number;
}

/**
 * `POST /connect/introspect` (RFC 7662). The caller is an API resource (Basic with its name and
 * one of its `secrets`; resource names are looked up before client ids) or a confidential client.
 * What the caller may see is decided by the worker that reads the token.
 */
export function createIntrospectionEndpoint(deps: IntrospectionEndpointDeps): (res: HttpResponse, req: HttpRequest) => void {
  const now = deps.now ?? Date.now;
  const resources = new Map<string, readonly StoredSecret[]>();
  for (const resource of deps.apiResources) resources.set(resource.name, decodeSecrets(resource.secrets));
  const authenticateClient = createClientAuthenticationStep(deps);
  // Resource secrets are guessed like client secrets: the same per-id throttle and answers apply.
  const gate = createCallerGate(deps);

  return createFormEndpoint(OAuthErrors.introspectionPostOnly, (request) => {
    const { exchange, params, authorization } = request;
    let caller: ['resource' | 'client', string];
    const basic = authorization.length > 0 ? decodeBasicAuthorization(authorization) : undefined;
    const resourceSecrets = basic ? resources.get(basic.clientId) : undefined;
    if (basic && resourceSecrets !== undefined) {
      if (gate.refuseBlocked(exchange, basic.clientId)) return;
      if (params.client_secret !== undefined || !matchesStoredSecret(basic.clientSecret, resourceSecrets, now())) {
        gate.refuseFailed(exchange, basic.clientId, true);
        return;
      }
      caller = ['resource', basic.clientId];
    } else {
      const client = authenticateClient(request);
      if (client === undefined) return;
      // RFC 7662 §2.1: the caller must be authorized; a public client cannot be.
      if (!client.requireSecret) {
        exchange.sendError(OAuthErrors.invalidClient);
        return;
      }
      caller = ['client', client.clientId];
    }
    if (params.token === undefined) {
      exchange.sendError(OAuthErrors.missingToken);
      return;
    }
    delete params.client_secret;
    deps.dispatcher.submit(exchange, [Endpoint.Introspection, caller[0], caller[1], params]);
  });
}
