import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { RegisteredClient } from '../../core/client_model.js';
import { OAuthErrors, type OAuthErrorEntry } from '../../core/oauth_errors.js';
import type { FormParams, TaskItem } from '../../wire/token_task.js';
import {
  authenticateClient,
  createClientAuthentication,
  withClientAssertion,
  type AuthenticatedClient,
  type AuthenticatedStep,
  type ClientAuthentication,
  type ClientAuthenticationDeps,
} from '../client_authentication/step.js';
import type { WorkerDispatcher } from '../dispatch/worker_dispatcher.js';
import type { CorsPolicy } from './cors.js';
import { readForm, type FormRequest, type FormRoute, type FormStep } from './form_request.js';

/**
 * The skeleton every OAuth API endpoint shares (token, introspection, revocation, device
 * authorization): its form read by {@link readForm}, the client authenticated by the one step
 * (gateway/client_authentication/step.ts), the work handed to a worker. Each endpoint's file then
 * holds only its own protocol steps.
 */

/** What every API endpoint is built from, at start. */
export interface ApiEndpointDeps extends ClientAuthenticationDeps {
  /** Told about every answer (metrics, access log, audit events). */
  observe?: FormRoute['observe'];
  /** Starts each request's trace span (tracing on). */
  begin?: FormRoute['begin'];
  /** Browser origins allowed to call the endpoint. */
  cors?: CorsPolicy | undefined;
}

/** What an API endpoint's steps share, built once at start; each endpoint adds its own members. */
export interface ApiRoute extends FormRoute {
  readonly clientAuthentication: ClientAuthentication;
}

/** An endpoint's route: the shared members from `deps`, the answer to any method but POST, and its own. */
export function createApiRoute<Own extends object>(deps: ApiEndpointDeps, postOnly: OAuthErrorEntry, own: Own): ApiRoute & Own {
  return {
    postOnly,
    observe: deps.observe,
    begin: deps.begin,
    cors: deps.cors,
    clientAuthentication: createClientAuthentication(deps),
    ...own,
  };
}

/**
 * What an endpoint whose work a worker runs and whose callers may send a DPoP proof (token,
 * revocation) is built from.
 */
export interface DPoPWorkerEndpointDeps extends ApiEndpointDeps {
  dispatcher: WorkerDispatcher;
  /**
   * The DPoP nonce to hand a client that must use one (RFC 9449 §8), `undefined` for the others;
   * `null` while the nonces' key has not come from the store (docs/operations.md, "Starting without
   * the store").
   */
  dpopNonceFor?: DPoPNonceFor | undefined;
}

/** What the steps of such an endpoint share, built once at start. */
export interface DPoPWorkerRoute extends ApiRoute {
  readonly dispatcher: WorkerDispatcher;
  readonly dpopNonceFor: DPoPNonceFor;
}

/** The route of an endpoint built from {@link DPoPWorkerEndpointDeps}, with its own members. */
export function createDPoPWorkerRoute<Own extends object>(
  deps: DPoPWorkerEndpointDeps,
  postOnly: OAuthErrorEntry,
  own: Own,
): DPoPWorkerRoute & Own {
  return createApiRoute(deps, postOnly, { dispatcher: deps.dispatcher, dpopNonceFor: deps.dpopNonceFor ?? noDPoPNonces, ...own });
}

/** The uWS handler of a form endpoint: reads the form, then runs `answer`, the endpoint's first step. */
export function serveForm<R extends FormRoute>(route: R, answer: FormStep<R>): (res: HttpResponse, req: HttpRequest) => void {
  return function serveFormRequest(res, req) {
    readForm(route, res, req, answer);
  };
}

/**
 * The uWS handler of an endpoint whose callers are clients (RFC 6749 §2.3, §3.2.1): reads the
 * form, authenticates the client, then runs `answerAuthenticated`. Built once at start.
 */
export function serveClientRequest<R extends ApiRoute>(
  route: R,
  answerAuthenticated: AuthenticatedStep<R>,
): (res: HttpResponse, req: HttpRequest) => void {
  return serveForm(route, function authenticateThenAnswer(route: R, request: FormRequest) {
    authenticateClient(route.clientAuthentication, route, request, answerAuthenticated);
  });
}

/**
 * A worker runs the request and answers it: straight to the exchange, or for an authenticated
 * client through its sink, which settles a client assertion first (the assertion travels as the
 * item's own member). Secrets stay on this thread.
 */
export function dispatchToWorker<T extends TaskItem & { readonly params: FormParams }>(
  dispatcher: WorkerDispatcher,
  { exchange }: FormRequest,
  item: T,
  caller: AuthenticatedClient | undefined,
): void {
  delete item.params.client_secret;
  if (caller === undefined) dispatcher.submit(exchange, item);
  else dispatcher.submit(caller.sink, withClientAssertion(item, caller));
}

/** The DPoP nonce a client must use (RFC 9449 §8), `undefined` for the others; `null` while the nonces' key is not loaded. */
export type DPoPNonceFor = (client: RegisteredClient) => string | undefined | null;

export const noDPoPNonces: DPoPNonceFor = () => undefined;

/**
 * RFC 9449 §4.3 check 1: at most one DPoP header; with `required` (RFC 9449 §5, a client with
 * `requireDPoP` at the token endpoint), exactly one. The proof itself is verified in the worker
 * (a signature check has no place on this thread); a client that must use nonces gets the
 * current one on the answer (RFC 9449 §8). Answers the request itself when it stops it.
 */
export function checkDPoPHeader(
  dpopNonceFor: DPoPNonceFor,
  { exchange, dpop }: FormRequest,
  client: RegisteredClient,
  required: boolean,
): boolean {
  if (dpop === '' && !required) return true;
  const nonce = dpopNonceFor(client);
  if (nonce === null) {
    // No nonce to hand out, and none a worker could check a proof against: the client tries again shortly.
    exchange.sendError(OAuthErrors.temporarilyUnavailable, { retryAfter: 1 });
    return false;
  }
  exchange.dpopNonce = nonce;
  if (dpop === null) exchange.sendError(OAuthErrors.dpopHeaderRepeated);
  else if (dpop === '') exchange.sendError(OAuthErrors.dpopProofRequired);
  else return true;
  return false;
}
