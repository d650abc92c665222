import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { RegisteredClient } from '../workers/protocol/client_model.js';
import { OAuthErrors } from '../workers/protocol/oauth_errors.js';
import type { TokenItem } from '../workers/protocol/token_task.js';
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

export interface TokenEndpointDeps extends ClientAuthenticationDeps {
  /** Read per request so that grant registration can change at run time. */
  grantTypes: () => ReadonlySet<string>;
  dispatcher: WorkerDispatcher;
  /** Told about every answer (metrics, access log, audit events). */
  observe?: FormRoute['observe'];
  /** Starts each request's trace span (tracing on). */
  begin?: FormRoute['begin'];
  cors?: CorsPolicy | undefined;
  /**
   * The DPoP nonce to hand a client that must use one (RFC 9449 §8), `undefined` for the others;
   * `null` while the nonces' key has not come from the store (docs/operations.md, "Starting without
   * the store").
   */
  dpopNonceFor?: ((client: RegisteredClient) => string | undefined | null) | undefined;
}

/** What the token endpoint's steps share, built once at start. */
interface TokenRoute extends FormRoute {
  readonly clientAuthentication: ClientAuthentication;
  readonly grantTypes: () => ReadonlySet<string>;
  readonly dispatcher: WorkerDispatcher;
  readonly dpopNonceFor: (client: RegisteredClient) => string | undefined | null;
}

/**
 * `POST /connect/token` (RFC 6749 §3.2). The request goes through {@link readForm}, then
 * {@link answerTokenRequest}'s steps; the grant itself runs in a worker.
 */
export function createTokenEndpoint(deps: TokenEndpointDeps): (res: HttpResponse, req: HttpRequest) => void {
  const route: TokenRoute = {
    postOnly: OAuthErrors.tokenPostOnly,
    observe: deps.observe,
    begin: deps.begin,
    cors: deps.cors,
    clientAuthentication: createClientAuthentication(deps),
    grantTypes: deps.grantTypes,
    dispatcher: deps.dispatcher,
    dpopNonceFor: deps.dpopNonceFor ?? (() => undefined),
  };
  return function tokenEndpoint(res, req) {
    readForm(route, res, req, answerTokenRequest);
  };
}

/**
 * The token request, step by step, once its form is read (RFC 6749 §3.2, §5.2). Each step answers
 * the request itself when it stops there.
 */
function answerTokenRequest(route: TokenRoute, request: FormRequest): void {
  authenticateClient(route.clientAuthentication, route, request, answerAuthenticatedTokenRequest);
}

function answerAuthenticatedTokenRequest(route: TokenRoute, request: FormRequest, caller: AuthenticatedClient): void {
  const { client } = caller;
  const grantType = requireParameter(request, 'grant_type', OAuthErrors.missingGrantType);
  if (grantType === undefined) return;
  if (!checkGrantTypeSupported(route, request, grantType)) return;
  // Registered grant types only: a metrics label must not take any string a caller sends.
  request.exchange.grantType = grantType;
  if (!checkGrantTypeAllowed(request, client, grantType)) return;
  if (!checkDPoPHeader(route, request, client)) return;
  dispatchToWorker(route, request, caller, grantType);
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
 * RFC 9449 §4.3 check 1 and §5: at most one DPoP header, and one for a client that requires DPoP.
 * The proof itself is verified in the worker (a signature check has no place on this thread);
 * a client that must use nonces gets the current one on every answer (RFC 9449 §8).
 */
function checkDPoPHeader(route: TokenRoute, { exchange, dpop }: FormRequest, client: RegisteredClient): boolean {
  if (dpop === '' && !client.config.requireDPoP) return true;
  const nonce = route.dpopNonceFor(client);
  if (nonce === null) {
    // No nonce to hand out, and none a worker could check: the client tries again shortly.
    exchange.sendError(OAuthErrors.temporarilyUnavailable, { retryAfter: 1 });
    return false;
  }
  exchange.dpopNonce = nonce;
  if (dpop === null) exchange.sendError(OAuthErrors.dpopHeaderRepeated);
  else if (dpop === '') exchange.sendError(OAuthErrors.dpopProofRequired);
  else return true;
  return false;
}

/** The grant runs in a worker, which answers the request; secrets stay on this thread. */
function dispatchToWorker(
  route: TokenRoute,
  { exchange, params, dpop }: FormRequest,
  caller: AuthenticatedClient,
  grantType: string,
): void {
  const { client } = caller;
  delete params.client_secret;
  // A password check logs who tried from where (docs/operations.md, "Logs"); other grants need no
  // address, and reading it costs the hot path.
  let item: TokenItem =
    grantType === 'password'
      ? { kind: 'token', grantType, clientId: client.clientId, params, address: exchange.remoteAddress() }
      : { kind: 'token', grantType, clientId: client.clientId, params };
  if (dpop) item = { ...item, dpop };
  route.dispatcher.submit(caller.sink, withClientAssertion(item, caller));
}
