import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { OAuthErrors } from '../../core/oauth_errors.js';
import type { RevocationItem } from '../../wire/token_task.js';
import type { AuthenticatedClient } from '../client_authentication/step.js';
import {
  checkDPoPHeader,
  createApiRoute,
  dispatchToWorker,
  noDPoPNonces,
  serveClientRequest,
  type ApiEndpointDeps,
  type ApiRoute,
  type DPoPNonceFor,
} from '../http/api_endpoint.js';
import { requireParameter, type FormRequest } from '../http/form_request.js';
import type { WorkerDispatcher } from '../dispatch/worker_dispatcher.js';

export interface RevocationEndpointDeps extends ApiEndpointDeps {
  dispatcher: WorkerDispatcher;
  /** The DPoP nonce to hand a client that must use one (RFC 9449 §8), `undefined` for the others. */
  dpopNonceFor?: DPoPNonceFor | undefined;
}

/** What the revocation endpoint's steps share, built once at start. */
interface RevocationRoute extends ApiRoute {
  readonly dispatcher: WorkerDispatcher;
  readonly dpopNonceFor: DPoPNonceFor;
}

/** `POST /connect/revocation` (RFC 7009), client-authenticated like the token endpoint. */
export function createRevocationEndpoint(deps: RevocationEndpointDeps): (res: HttpResponse, req: HttpRequest) => void {
  const route: RevocationRoute = createApiRoute(deps, OAuthErrors.revocationPostOnly, {
    dispatcher: deps.dispatcher,
    dpopNonceFor: deps.dpopNonceFor ?? noDPoPNonces,
  });
  return serveClientRequest(route, answerRevocationRequest);
}

/** The revocation request of an authenticated client, step by step (RFC 7009 §2.1). */
function answerRevocationRequest(route: RevocationRoute, request: FormRequest, caller: AuthenticatedClient): void {
  if (requireParameter(request, 'token', OAuthErrors.missingToken) === undefined) return;
  // A proof is what revokes a DPoP-bound refresh token (workers/endpoints/revocation.ts); the
  // worker verifies it, and only when the token is bound: none is required here.
  if (!checkDPoPHeader(route.dpopNonceFor, request, caller.client, false)) return;
  revokeInWorker(route, request, caller);
}

/** A worker revokes the token and answers. */
function revokeInWorker(route: RevocationRoute, request: FormRequest, caller: AuthenticatedClient): void {
  const { params, dpop } = request;
  const item: RevocationItem = { kind: 'revocation', clientId: caller.client.clientId, params };
  dispatchToWorker(route.dispatcher, request, dpop ? { ...item, dpop } : item, caller);
}
