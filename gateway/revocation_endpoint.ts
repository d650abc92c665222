import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { OAuthErrors } from '../workers/protocol/oauth_errors.js';
import {
  authenticateClient,
  createClientAuthentication,
  withClientAssertion,
  type AuthenticatedClient,
  type ClientAuthentication,
  type ClientAuthenticationDeps,
} from './client_authentication/step.js';
import type { CorsPolicy } from './http/cors.js';
import { readForm, requireParameter, type FormRequest, type FormRoute } from './http/form_request.js';
import type { WorkerDispatcher } from './worker_dispatcher.js';

export interface RevocationEndpointDeps extends ClientAuthenticationDeps {
  /** Told about every answer (metrics, access log, audit events). */
  observe?: FormRoute['observe'];
  /** Starts each request's trace span (tracing on). */
  begin?: FormRoute['begin'];
  dispatcher: WorkerDispatcher;
  cors?: CorsPolicy | undefined;
}

/** What the revocation endpoint's steps share, built once at start. */
interface RevocationRoute extends FormRoute {
  readonly clientAuthentication: ClientAuthentication;
  readonly dispatcher: WorkerDispatcher;
}

/** `POST /connect/revocation` (RFC 7009), client-authenticated like the token endpoint. */
export function createRevocationEndpoint(deps: RevocationEndpointDeps): (res: HttpResponse, req: HttpRequest) => void {
  const route: RevocationRoute = {
    postOnly: OAuthErrors.revocationPostOnly,
    observe: deps.observe,
    begin: deps.begin,
    cors: deps.cors,
    clientAuthentication: createClientAuthentication(deps),
    dispatcher: deps.dispatcher,
  };
  return function revocationEndpoint(res, req) {
    readForm(route, res, req, answerRevocationRequest);
  };
}

/** The revocation request, step by step, once its form is read (RFC 7009 §2.1). */
function answerRevocationRequest(route: RevocationRoute, request: FormRequest): void {
  authenticateClient(route.clientAuthentication, route, request, answerAuthenticatedRevocationRequest);
}

function answerAuthenticatedRevocationRequest(route: RevocationRoute, request: FormRequest, caller: AuthenticatedClient): void {
  if (requireParameter(request, 'token', OAuthErrors.missingToken) === undefined) return;
  dispatchToWorker(route, request, caller);
}

/** A worker revokes the token and answers; secrets stay on this thread. */
function dispatchToWorker(route: RevocationRoute, { params }: FormRequest, caller: AuthenticatedClient): void {
  delete params.client_secret;
  route.dispatcher.submit(
    caller.sink,
    withClientAssertion({ kind: 'revocation', clientId: caller.client.clientId, params } as const, caller),
  );
}
