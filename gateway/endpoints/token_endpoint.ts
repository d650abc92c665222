import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { RegisteredClient } from '../../core/client_model.js';
import { OAuthErrors } from '../../core/oauth_errors.js';
import type { TokenItem } from '../../wire/token_task.js';
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

export interface TokenEndpointDeps extends DPoPWorkerEndpointDeps {
  /** Read per request so that grant registration can change at run time. */
  grantTypes: () => ReadonlySet<string>;
}

/** What the token endpoint's steps share, built once at start. */
interface TokenRoute extends DPoPWorkerRoute {
  readonly grantTypes: () => ReadonlySet<string>;
}

/**
 * `POST /connect/token` (RFC 6749 §3.2). The form is read and the client authenticated
 * (gateway/http/api_endpoint.ts), then {@link answerTokenRequest}'s steps run; the grant itself
 * runs in a worker.
 */
export function createTokenEndpoint(deps: TokenEndpointDeps): (res: HttpResponse, req: HttpRequest) => void {
  const route: TokenRoute = createDPoPWorkerRoute(deps, OAuthErrors.tokenPostOnly, { grantTypes: deps.grantTypes });
  return serveClientRequest(route, answerTokenRequest);
}

/**
 * The token request of an authenticated client, step by step (RFC 6749 §3.2, §5.2). Each step
 * answers the request itself when it stops there.
 */
function answerTokenRequest(route: TokenRoute, request: FormRequest, caller: AuthenticatedClient): void {
  const { client } = caller;
  const grantType = requireParameter(request, 'grant_type', OAuthErrors.missingGrantType);
  if (grantType === undefined) return;
  if (!checkGrantTypeSupported(route, request, grantType)) return;
  // Registered grant types only: a metrics label must not take any string a caller sends.
  request.exchange.grantType = grantType;
  if (!checkGrantTypeAllowed(request, client, grantType)) return;
  // RFC 9449 §5: a client that requires DPoP sends a proof with every token request.
  if (!checkDPoPHeader(route.dpopNonceFor, request, client, client.config.requireDPoP)) return;
  const x5t = boundCertificate(request, client);
  if (x5t === null) return;
  runGrant(route, request, caller, grantType, x5t);
}

/** RFC 6749 §5.2 `unsupported_grant_type`: no grant of this type is registered. */
function checkGrantTypeSupported(route: TokenRoute, request: FormRequest, grantType: string): boolean {
  if (route.grantTypes().has(grantType)) return true;
  request.exchange.sendError(OAuthErrors.unsupportedGrantType);
  return false;
}

/** RFC 6749 §5.2 `unauthorized_client`: the client is not registered for this grant type. */
function checkGrantTypeAllowed(request: FormRequest, client: RegisteredClient, grantType: string): boolean {
  if (client.grantTypes.has(grantType)) return true;
  request.exchange.sendError(OAuthErrors.grantTypeNotAllowed);
  return false;
}

/**
 * RFC 8705 §3: the thumbprint of the certificate a bound client's tokens are bound to (`undefined`
 * for a client whose tokens are not); `null` when the client sent none, and the request is answered.
 * A `fapi2` client's tokens are always sender-constrained (FAPI 2.0 §5.3.2.1, docs/endpoints.md
 * "FAPI 2.0"): by the DPoP proof when the request has one, else by its certificate, else refused.
 */
function boundCertificate(request: FormRequest, client: RegisteredClient): string | undefined | null {
  const { config } = client;
  if (!config.tlsClientCertificateBoundAccessTokens && (config.profile !== 'fapi2' || request.dpop !== '')) return undefined;
  const certificate = request.exchange.clientCertificate();
  if (certificate !== undefined) return certificate.thumbprint;
  request.exchange.sendError(
    config.tlsClientCertificateBoundAccessTokens ? OAuthErrors.clientCertificateRequired : OAuthErrors.senderConstraintRequired,
  );
  return null;
}

/** The grant runs in a worker, which answers the request. */
function runGrant(route: TokenRoute, request: FormRequest, caller: AuthenticatedClient, grantType: string, x5t: string | undefined): void {
  const { exchange, params, dpop } = request;
  const { clientId } = caller.client;
  // A password check logs who tried from where (docs/operations.md, "Logs"); other grants need no
  // address, and reading it costs the hot path.
  let item: TokenItem =
    grantType === 'password'
      ? { kind: 'token', grantType, clientId, params, address: exchange.remoteAddress() }
      : { kind: 'token', grantType, clientId, params };
  if (dpop) item = { ...item, dpop };
  if (x5t !== undefined) item = { ...item, x5t };
  // A store-kept client is not in the workers' boot data: its config goes with the request.
  if (caller.client.stored !== undefined) item = { ...item, client: caller.client.stored };
  dispatchToWorker(route.dispatcher, request, item, caller);
}
