import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { TesseraConfig } from '../config/schema.js';
import { decodeSecrets, type StoredSecret } from '../../core/client_model.js';
import { OAuthErrors } from '../../core/oauth_errors.js';
import { matchesStoredSecret } from '../client_authentication/authenticator.js';
import { decodeBasicAuthorization, type BasicCredentials } from '../client_authentication/credentials.js';
import { VerifiedHeaders } from '../client_authentication/verified_headers.js';
import { authenticateClient, type AuthenticatedClient } from '../client_authentication/step.js';
import { createApiRoute, dispatchToWorker, serveForm, type ApiEndpointDeps, type ApiRoute } from '../http/api_endpoint.js';
import { requireParameter, type FormRequest } from '../http/form_request.js';
import type { WorkerDispatcher } from '../dispatch/worker_dispatcher.js';
import type { ApiResourceRegistry } from '../client_registry/api_resource_registry.js';

export interface IntrospectionEndpointDeps extends ApiEndpointDeps {
  apiResources: TesseraConfig['apiResources'];
  /** Store-kept API resources, after the config file's (gateway/client_registry/api_resource_registry.ts). */
  storedApiResources?: Pick<ApiResourceRegistry, 'secretsOf'> | undefined;
  dispatcher: WorkerDispatcher;
  now?: () => number;
}

/** What the introspection endpoint's steps share, built once at start. */
interface IntrospectionRoute extends ApiRoute {
  /** API resource names and their stored secrets: the config file's, then the store's. */
  readonly resources: ResourceSecrets;
  /**
   * Basic headers that authenticated an API resource recently, its name and the secrets they
   * matched (as clients' are): a hit counts only while the resource has those very secrets, so a
   * store-kept resource deleted or given new secrets is checked afresh.
   */
  readonly verifiedResources: VerifiedHeaders<{ readonly name: string; readonly secrets: readonly StoredSecret[] }>;
  readonly dispatcher: WorkerDispatcher;
  readonly now: () => number;
}

/** Where a resource name finds its secrets. */
interface ResourceSecrets {
  get(name: string): readonly StoredSecret[] | undefined;
  has(name: string): boolean;
}

/**
 * Who asks, as the worker that reads the token needs to know it, and where its answer goes; a
 * client with `private_key_jwt` also carries its assertion for the worker to verify first.
 */
type Caller = readonly ['resource' | 'client', string, AuthenticatedClient?];

/**
 * `POST /connect/introspect` (RFC 7662). The caller is an API resource (its name and one of its
 * `secrets`, with Basic or in the body; resource names are looked up before client ids) or a
 * confidential client.
 * What the caller may see is decided by the worker that reads the token.
 */
export function createIntrospectionEndpoint(deps: IntrospectionEndpointDeps): (res: HttpResponse, req: HttpRequest) => void {
  const configured = new Map<string, readonly StoredSecret[]>();
  for (const resource of deps.apiResources) configured.set(resource.name, decodeSecrets(resource.secrets));
  const stored = deps.storedApiResources;
  // Without store-kept resources the map itself: no second lookup per request.
  const resources: ResourceSecrets =
    stored === undefined
      ? configured
      : {
          get: (name) => configured.get(name) ?? stored.secretsOf(name),
          has: (name) => configured.has(name) || stored.secretsOf(name) !== undefined,
        };
  const route: IntrospectionRoute = createApiRoute(deps, OAuthErrors.introspectionPostOnly, {
    resources,
    verifiedResources: new VerifiedHeaders(deps.now ?? Date.now),
    dispatcher: deps.dispatcher,
    now: deps.now ?? Date.now,
  });
  // Not serveClientRequest: an API resource may call too, and is authenticated first.
  return serveForm(route, authenticateCaller);
}

/** The introspection request of an authenticated caller, step by step (RFC 7662 §2.1). */
function answerIntrospectionRequest(route: IntrospectionRoute, request: FormRequest, caller: Caller): void {
  if (requireParameter(request, 'token', OAuthErrors.missingToken) === undefined) return;
  introspectInWorker(route, request, caller);
}

/** RFC 7662 §2.1: the caller must be authorized to introspect, as an API resource or a confidential client. */
function authenticateCaller(route: IntrospectionRoute, request: FormRequest): void {
  const { authorization } = request;
  const remembered = authorization.length > 0 ? route.verifiedResources.get(authorization) : undefined;
  const known = remembered !== undefined && route.resources.get(remembered.name) === remembered.secrets ? remembered.name : undefined;
  if (known !== undefined) {
    const resource = admitKnownApiResource(route, request, known);
    if (resource !== undefined) answerIntrospectionRequest(route, request, resource);
    return;
  }
  // A header that authenticated a client whose id is no resource name goes to client
  // authentication, which answers it from memory, without being decoded here as well.
  const client = authorization.length > 0 ? route.clientAuthentication.authenticator.rememberedClientId(authorization) : undefined;
  const basic =
    authorization.length > 0 && (client === undefined || route.resources.has(client)) ? decodeBasicAuthorization(authorization) : undefined;
  const resourceSecrets = basic ? route.resources.get(basic.clientId) : undefined;
  if (basic && resourceSecrets !== undefined) {
    const resource = authenticateApiResource(route, request, basic, resourceSecrets);
    if (resource !== undefined) answerIntrospectionRequest(route, request, resource);
    return;
  }
  // Discovery advertises client_secret_post here, and openid-client sends it by default: a resource
  // may put its name and secret in the body as a client may (RFC 6749 §2.3.1, RFC 7662 §2.1).
  const posted = authorization.length === 0 ? postedResourceCredentials(route, request.params) : undefined;
  if (posted !== undefined) {
    const resource = authenticateApiResource(route, request, posted.credentials, posted.secrets, false);
    if (resource !== undefined) answerIntrospectionRequest(route, request, resource);
    return;
  }
  authenticateClient(route.clientAuthentication, route, request, answerAuthenticatedClientIntrospection);
}

/** `client_id` naming an API resource with a `client_secret` beside it (resource names before client ids, as with Basic). */
function postedResourceCredentials(
  route: IntrospectionRoute,
  params: FormRequest['params'],
): { credentials: BasicCredentials; secrets: readonly StoredSecret[] } | undefined {
  const { client_id: clientId, client_secret: clientSecret } = params;
  if (typeof clientId !== 'string' || typeof clientSecret !== 'string') return undefined;
  const secrets = route.resources.get(clientId);
  return secrets === undefined ? undefined : { credentials: { clientId, clientSecret }, secrets };
}

/** Resource secrets are guessed like client secrets: the same per-id throttle and answers apply. */
function authenticateApiResource(
  route: IntrospectionRoute,
  { exchange, params, authorization }: FormRequest,
  credentials: BasicCredentials,
  secrets: readonly StoredSecret[],
  basic = true,
): Caller | undefined {
  const gate = route.clientAuthentication.gate;
  if (gate.refuseBlocked(exchange, credentials.clientId)) return undefined;
  // RFC 6749 §2.3: one method per request. With Basic, any credential in the body is a second
  // one; with the body, an assertion is.
  if (basic ? alsoInBody(params) : params.client_assertion !== undefined) {
    if (basic) gate.refuseFailed(exchange, credentials.clientId, true);
    else gate.refuseMultipleMethods(exchange, credentials.clientId);
    return undefined;
  }
  if (!matchesStoredSecret(credentials.clientSecret, secrets, route.now())) {
    gate.refuseFailed(exchange, credentials.clientId, basic);
    return undefined;
  }
  if (basic) route.verifiedResources.remember(authorization, { name: credentials.clientId, secrets }, secrets);
  return ['resource', credentials.clientId];
}

/** A resource whose Basic header proved its secret recently: the throttle and the one-method rule still apply. */
function admitKnownApiResource(route: IntrospectionRoute, { exchange, params }: FormRequest, name: string): Caller | undefined {
  const gate = route.clientAuthentication.gate;
  if (gate.refuseBlocked(exchange, name)) return undefined;
  if (alsoInBody(params)) {
    gate.refuseFailed(exchange, name, true);
    return undefined;
  }
  return ['resource', name];
}

/** One method per request (RFC 6749 §2.3): a resource's Basic header, and no credentials in the body. */
function alsoInBody(params: FormRequest['params']): boolean {
  return params.client_secret !== undefined || params.client_assertion !== undefined;
}

function answerAuthenticatedClientIntrospection(route: IntrospectionRoute, request: FormRequest, authenticated: AuthenticatedClient): void {
  const { client } = authenticated;
  // RFC 7662 §2.1: a public client cannot be authorized to introspect.
  if (!client.requireSecret) {
    request.exchange.sendError(OAuthErrors.invalidClient);
    return;
  }
  answerIntrospectionRequest(route, request, ['client', client.clientId, authenticated]);
}

/** A worker reads the token and answers; what the caller may see is decided there. */
function introspectInWorker(route: IntrospectionRoute, request: FormRequest, [caller, callerId, client]: Caller): void {
  dispatchToWorker(route.dispatcher, request, { kind: 'introspection', caller, callerId, params: request.params }, client);
}
