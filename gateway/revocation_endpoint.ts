import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { RegisteredClient } from '../workers/protocol/client_model.js';
import { OAuthErrors } from '../workers/protocol/oauth_errors.js';
import type { RevocationItem } from '../workers/protocol/token_task.js';
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
  /** The DPoP nonce to hand a client that must use one (RFC 9449 §8), `undefined` for the others. */
  dpopNonceFor?: ((client: RegisteredClient) => string | undefined | null) | undefined;
}

/** What the revocation endpoint's steps share, built once at start. */
interface RevocationRoute extends FormRoute {
  readonly clientAuthentication: ClientAuthentication;
  readonly dispatcher: WorkerDispatcher;
  readonly dpopNonceFor: (client: RegisteredClient) => string | undefined | null;
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
    dpopNonceFor: deps.dpopNonceFor ?? (() => undefined),
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
  if (!checkDPoPHeader(route, request, caller.client)) return;
  dispatchToWorker(route, request, caller);
}

/**
 * RFC 9449 §4.3 check 1: at most one DPoP header. A proof is what revokes a DPoP-bound refresh
 * token (workers/endpoints/revocation.ts); the worker verifies it, and only when the token is
 * bound. A client that must use nonces gets the current one with the answer (RFC 9449 §8).
 */
function checkDPoPHeader(route: RevocationRoute, { exchange, dpop }: FormRequest, client: RegisteredClient): boolean {
  if (dpop === '') return true;
  const nonce = route.dpopNonceFor(client);
  if (nonce === null) {
    // The nonces' key (the page secret) is not loaded yet: no nonce to check the proof against.
    exchange.sendError(OAuthErrors.temporarilyUnavailable, { retryAfter: 1 });
    return false;
  }
  exchange.dpopNonce = nonce;
  if (dpop !== null) return true;
  exchange.sendError(OAuthErrors.dpopHeaderRepeated);
  return false;
}

/** A worker revokes the token and answers; secrets stay on this thread. */
function dispatchToWorker(route: RevocationRoute, { params, dpop }: FormRequest, caller: AuthenticatedClient): void {
  delete params.client_secret;
  const item: RevocationItem = { kind: 'revocation', clientId: caller.client.clientId, params };
  route.dispatcher.submit(caller.sink, withClientAssertion(dpop ? { ...item, dpop } : item, caller));
}
