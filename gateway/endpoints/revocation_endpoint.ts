import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { OAuthErrors } from '../../core/oauth_errors.js';
import type { RevocationItem } from '../../wire/token_task.js';
import type { AuthenticatedClient } from '../client_authentication/step.js';
import {
  checkDPoPHeader,
  createDPoPWorkerRoute,
  dispatchToWorker,
  serveClientRequest,
  type DPoPWorkerEndpointDeps,
  type DPoPWorkerRoute,
} from '../http/api_endpoint.js';
import { requireParameter, type FormRequest } from '../http/form_request.js';

/** The revocation endpoint needs nothing beyond a DPoP-taking worker endpoint's deps. */
export type RevocationEndpointDeps = DPoPWorkerEndpointDeps;

/** What the revocation endpoint's steps share, built once at start. */
type RevocationRoute = DPoPWorkerRoute;

/** `POST /connect/revocation` (RFC 7009), client-authenticated like the token endpoint. */
export function createRevocationEndpoint(deps: RevocationEndpointDeps): (res: HttpResponse, req: HttpRequest) => void {
  const route: RevocationRoute = createDPoPWorkerRoute(deps, OAuthErrors.revocationPostOnly, {});
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
  const { stored } = caller.client;
  // A store-kept client is not in the workers' boot data: its config goes with the request.
  const item: RevocationItem =
    stored === undefined
      ? { kind: 'revocation', clientId: caller.client.clientId, params }
      : { kind: 'revocation', clientId: caller.client.clientId, params, client: stored };
  // RFC 8705 §4: the worker compares it with a certificate-bound refresh token's binding.
  const x5t = request.exchange.clientCertificate()?.thumbprint;
  const bound = x5t === undefined ? item : { ...item, x5t };
  dispatchToWorker(route.dispatcher, request, dpop ? { ...bound, dpop } : bound, caller);
}
