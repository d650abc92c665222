import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { RegisteredClient } from '../../core/client_model.js';
import { OAuthErrors, pushedAuthorizationError, type OAuthErrorEntry } from '../../core/oauth_errors.js';
import type { ScopeRules } from '../../core/rules/scope_rules.js';
import { isStoreUnavailable, type Store } from '../../core/store/store.js';
import { newRequestUri, type PushedRequestRecord } from '../../core/records/pushed_request_record.js';
import type { RequestObjectCheck } from '../../core/request_object.js';
import type { AuthorizationRequestItem, FormParams } from '../../wire/token_task.js';
import { settleAssertion, type AuthenticatedClient } from '../client_authentication/step.js';
import { deliver, type WorkerDispatcher } from '../dispatch/worker_dispatcher.js';
import {
  checkDPoPHeader,
  createApiRoute,
  serveClientRequest,
  type ApiEndpointDeps,
  type ApiRoute,
  type DPoPNonceFor,
} from '../http/api_endpoint.js';
import type { FormRequest } from '../http/form_request.js';
import { formParamsToQuery, validateAuthorizeParams, type AuthorizeRules, type RequestOrigin } from '../pages/authorize_request.js';
import { prepareRequestObject } from '../pages/request_object.js';
import { endpointPaths } from './endpoint_paths.js';

export const pushedAuthorizationPath = endpointPaths.pushedAuthorization;

export interface PushedAuthorizationDeps extends ApiEndpointDeps {
  scopes: ScopeRules;
  store: Store;
  dispatcher: WorkerDispatcher;
  /** `pushedAuthorizationRequests` (docs/configuration.md). */
  settings: { readonly required: boolean; readonly lifetimeSeconds: number };
  dpopNonceFor: DPoPNonceFor;
  /** Why a request object was refused (never in the answer). */
  logger?: Logger | undefined;
  now?: () => number;
}

interface PushedAuthorizationRoute extends ApiRoute {
  readonly rules: AuthorizeRules;
  readonly store: Store;
  readonly dispatcher: WorkerDispatcher;
  readonly lifetimeSeconds: number;
  readonly dpopNonceFor: DPoPNonceFor;
  readonly issuer: string;
  readonly logger: Logger | undefined;
  readonly now: () => number;
}

/** Authentication parameters: they authenticate the push, they are no part of the request stored. */
const authenticationParams: ReadonlySet<string> = new Set(['client_secret', 'client_assertion', 'client_assertion_type']);

/**
 * The pushed authorization request endpoint (RFC 9126 §2): the client authenticates as at the
 * token endpoint, the request is validated as the authorization endpoint validates it (the same
 * function), stored once for `lifetimeSeconds`, and named by a `request_uri` the authorization
 * endpoint consumes (RFC 9126 §4). Signature checks (an assertion, a DPoP proof, a request object)
 * run together in one worker task, never on this thread.
 */
export function createPushedAuthorizationEndpoint(deps: PushedAuthorizationDeps): (res: HttpResponse, req: HttpRequest) => void {
  const route: PushedAuthorizationRoute = createApiRoute(deps, OAuthErrors.pushedAuthorizationPostOnly, {
    rules: { scopes: deps.scopes, requirePushed: deps.settings.required },
    store: deps.store,
    dispatcher: deps.dispatcher,
    lifetimeSeconds: deps.settings.lifetimeSeconds,
    dpopNonceFor: deps.dpopNonceFor,
    issuer: deps.issuer,
    logger: deps.logger,
    now: deps.now ?? Date.now,
  });
  return serveClientRequest(route, answerPushedAuthorizationRequest);
}

/** RFC 9126 §2.1 for an authenticated client. */
function answerPushedAuthorizationRequest(route: PushedAuthorizationRoute, request: FormRequest, caller: AuthenticatedClient): void {
  const { params } = request;
  const { client } = caller;
  // RFC 9126 §2.1: the request is the client's own, and names no other request.
  if (params.client_id !== undefined && params.client_id !== client.clientId)
    return refuse(request, caller, OAuthErrors.pushedClientMismatch);
  if (params.request_uri !== undefined) return refuse(request, caller, OAuthErrors.pushedRequestUri);
  // RFC 9449 §10: a DPoP proof here binds the code; at most one.
  if (!checkDPoPHeader(route.dpopNonceFor, request, client, false)) {
    caller.attempt?.release();
    return;
  }
  void checkSignaturesThenStore(route, request, caller);
}

/** Answered before the worker saw the assertion: nothing was learnt about it (core/throttles.ts). */
function refuse({ exchange }: FormRequest, caller: AuthenticatedClient, entry: OAuthErrorEntry): void {
  caller.attempt?.release();
  exchange.sendError(entry);
}

/** The worker's checks when there are any, then {@link storeRequest}. Never rejects. */
async function checkSignaturesThenStore(route: PushedAuthorizationRoute, request: FormRequest, caller: AuthenticatedClient): Promise<void> {
  const { params } = request;
  const { client, assertion } = caller;
  let requestParams: FormParams = params;
  let requestObject: RequestObjectCheck | undefined;
  const jwt = params.request;
  if (jwt !== undefined) {
    // RFC 9126 §3: a request object pushed is verified as at the authorization endpoint.
    const prepared = await prepareRequestObject(jwt, client, params, {
      issuer: route.issuer,
      clientKeys: route.clientAuthentication.clientKeys,
      now: route.now,
    });
    if (!prepared.ok) {
      route.logger?.info({ clientId: client.clientId, detail: prepared.reason }, 'request rejected');
      return refuse(request, caller, OAuthErrors.invalidRequestObject);
    }
    requestParams = prepared.params;
    requestObject = prepared.check;
  }
  const dpop = request.dpop === '' || request.dpop === null ? undefined : request.dpop;
  let jkt: string | undefined;
  if (assertion !== undefined || dpop !== undefined || requestObject !== undefined) {
    const item: AuthorizationRequestItem = {
      kind: 'authorization_request',
      clientId: client.clientId,
      params: {},
      ...(assertion !== undefined ? { clientAssertion: assertion } : {}),
      ...(dpop !== undefined ? { dpop } : {}),
      ...(requestObject !== undefined ? { requestObject } : {}),
      ...(client.stored !== undefined ? { client: client.stored } : {}),
    };
    const result = await route.dispatcher.call(item);
    if (result[0] !== 200) {
      deliver(caller.sink, result);
      return;
    }
    if (caller.attempt !== undefined) settleAssertion(caller.attempt, result);
    jkt = (JSON.parse(result[1]) as { jkt?: string }).jkt;
  }
  await storeRequest(route, request, client, requestParams, { pushed: true, signed: requestObject !== undefined }, jkt);
}

/** Validates the request as the authorization endpoint would, stores it, answers 201 (RFC 9126 §2.2). */
async function storeRequest(
  route: PushedAuthorizationRoute,
  { exchange }: FormRequest,
  client: RegisteredClient,
  given: FormParams,
  origin: RequestOrigin,
  jkt: string | undefined,
): Promise<void> {
  const params: FormParams = Object.assign(Object.create(null) as FormParams, given, { client_id: client.clientId });
  if (jkt !== undefined) {
    // RFC 9449 §10: the proof binds the code; a dpop_jkt beside it must name the same key.
    if (params.dpop_jkt !== undefined && params.dpop_jkt !== jkt) return exchange.sendError(OAuthErrors.pushedDPoPKeyMismatch);
    params.dpop_jkt = jkt;
  }
  const query = formParamsToQuery(params, authenticationParams);
  const outcome = validateAuthorizeParams(params, query, client, route.rules, origin);
  // RFC 9126 §2.3: errors in the body; the endpoint never redirects.
  if (outcome.kind === 'page') return exchange.sendError(OAuthErrors.pushedRedirectUri);
  if (outcome.kind === 'redirect') return exchange.sendError(pushedAuthorizationError(outcome.entry));
  const { requestUri, key } = newRequestUri();
  const record: PushedRequestRecord = { v: 1, clientId: client.clientId, query, signed: origin.signed };
  try {
    await route.store.set(key, record, route.lifetimeSeconds * 1000);
  } catch (err) {
    if (isStoreUnavailable(err)) exchange.sendError(OAuthErrors.temporarilyUnavailable, { retryAfter: 2 });
    else exchange.sendError(OAuthErrors.serverError);
    return;
  }
  exchange.sendJson(201, JSON.stringify({ request_uri: requestUri, expires_in: route.lifetimeSeconds }));
}
