import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { deviceCodeGrantType } from '../../core/grant_types.js';
import { userPolicy, type ScopeRules } from '../../core/rules/scope_rules.js';
import { narrowRequestedGrant, type RequestedGrant } from '../../core/rules/scope_narrowing.js';
import type { RegisteredClient } from '../../core/client_model.js';
import { OAuthError, OAuthErrors } from '../../core/oauth_errors.js';
import { isStoreUnavailable, type Store, type StoreKey } from '../../core/store/store.js';
import {
  displayUserCode,
  expiredGraceMs,
  newUserCode,
  userCodeKey,
  type DeviceCodeRecord,
  type UserCodeRecord,
} from '../../core/records/device_code_record.js';
import { newFamilyHandle, newFamilyId } from '../../core/records/refresh_token_handle.js';
import { settleAssertion, type AuthenticatedClient } from '../client_authentication/step.js';
import { createApiRoute, serveClientRequest, type ApiEndpointDeps, type ApiRoute } from '../http/api_endpoint.js';
import type { Exchange } from '../http/exchange.js';
import type { FormRequest } from '../http/form_request.js';
import { RequestRate, type RateLimits } from '../../core/throttles.js';
import { deliver, type WorkerDispatcher } from '../dispatch/worker_dispatcher.js';
import { endpointPaths } from './endpoint_paths.js';

export const deviceAuthorizationPath = endpointPaths.deviceAuthorization;
export const devicePagePath = endpointPaths.devicePage;

export interface DeviceAuthorizationDeps extends ApiEndpointDeps {
  scopes: ScopeRules;
  store: Store;
  /** Device authorizations per client and source address (`throttling.deviceAuthorization`). */
  rate: RateLimits;
  /** Verifies `private_key_jwt` assertions in a worker; without it such clients are refused. */
  dispatcher?: WorkerDispatcher | undefined;
  now?: () => number;
}

/** What the device authorization endpoint's steps share, built once at start. */
interface DeviceAuthorizationRoute extends ApiRoute {
  readonly scopes: ScopeRules;
  readonly store: Store;
  readonly rate: RequestRate;
  readonly dispatcher: WorkerDispatcher | undefined;
  readonly now: () => number;
  readonly verificationUri: string;
}

/**
 * The device authorization endpoint (RFC 8628 §3.1, §3.2): client authentication as at the token
 * endpoint (public clients by `client_id`), the scope rules of the token endpoint, then a device
 * code (a family handle, ≥ 256 bits) and a user code the user types on the `/device` page.
 */
export function createDeviceAuthorizationEndpoint(deps: DeviceAuthorizationDeps): (res: HttpResponse, req: HttpRequest) => void {
  const route: DeviceAuthorizationRoute = createApiRoute(deps, OAuthErrors.deviceAuthorizationPostOnly, {
    scopes: deps.scopes,
    store: deps.store,
    rate: new RequestRate(deps.store, 'devauth', deps.rate),
    dispatcher: deps.dispatcher,
    now: deps.now ?? Date.now,
    verificationUri: `${deps.issuer}${devicePagePath}`,
  });
  return serveClientRequest(route, answerDeviceAuthorizationRequest);
}

/** The device authorization request of an authenticated client (RFC 8628 §3.1). */
function answerDeviceAuthorizationRequest(route: DeviceAuthorizationRoute, request: FormRequest, caller: AuthenticatedClient): void {
  if (caller.assertion === undefined) answerAuthenticatedRequest(route, request, caller.client);
  else verifyAssertionThenAnswer(route, request, caller);
}

/**
 * This endpoint's work runs on the gateway, but a signature check does not (docs/architecture.md,
 * "Client assertions"): a worker verifies the assertion on its own, then the request goes on here.
 */
function verifyAssertionThenAnswer(route: DeviceAuthorizationRoute, request: FormRequest, caller: AuthenticatedClient): void {
  const { client, assertion } = caller;
  if (route.dispatcher === undefined || assertion === undefined) {
    request.exchange.sendError(OAuthErrors.invalidClient);
    return;
  }
  void route.dispatcher
    .call({ kind: 'client_assertion', clientId: client.clientId, params: {}, clientAssertion: assertion })
    .then((result) => {
      if (result[0] !== 200) {
        deliver(caller.sink, result);
        return;
      }
      // Verified: the answer is made here, not by the sink, so the assertion's attempt is settled here.
      if (caller.attempt !== undefined) settleAssertion(caller.attempt, result);
      answerAuthenticatedRequest(route, request, client);
    });
}

function answerAuthenticatedRequest(route: DeviceAuthorizationRoute, request: FormRequest, client: RegisteredClient): void {
  if (!checkDeviceGrantAllowed(request, client)) return;
  const granted = checkScope(route, request, client);
  if (granted === undefined) return;
  void checkRateThenIssue(route, request, client, granted);
}

/** What the device authorization grants: scopes, narrowed to the resources it names (RFC 8707 §2). */
type DeviceGrant = RequestedGrant;

/**
 * Each device authorization writes records that live for the code's lifetime, and a public client
 * needs no secret to ask: without a rate, anyone can fill the store. Counted per client and
 * source address; never rejects.
 */
async function checkRateThenIssue(route: DeviceAuthorizationRoute, request: FormRequest, client: RegisteredClient, granted: DeviceGrant) {
  const { exchange } = request;
  const address = exchange.remoteAddress();
  let retryAfter: number;
  try {
    retryAfter = await route.rate.take(`${client.clientId}\u0000${address}`);
  } catch (err) {
    if (isStoreUnavailable(err)) exchange.sendError(OAuthErrors.temporarilyUnavailable, { retryAfter: 2 });
    else exchange.sendError(OAuthErrors.serverError);
    return;
  }
  if (retryAfter > 0) {
    exchange.sendError(OAuthErrors.tooManyDeviceAuthorizations, { retryAfter });
    return;
  }
  await issueDeviceCode(route, exchange, client, granted);
}

/** RFC 6749 §5.2 `unauthorized_client`: the client is not registered for the device grant. */
function checkDeviceGrantAllowed(request: FormRequest, client: RegisteredClient): boolean {
  if (client.grantTypes.has(deviceCodeGrantType)) return true;
  request.exchange.sendError(OAuthErrors.deviceFlowNotAllowed);
  return false;
}

/** RFC 8628 §3.1 `scope`, under the rules of a grant that signs a user in, and RFC 8707 `resource`. */
function checkScope(route: DeviceAuthorizationRoute, request: FormRequest, client: RegisteredClient): DeviceGrant | undefined {
  try {
    return narrowRequestedGrant(route.scopes, client, request.params, userPolicy);
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err;
    request.exchange.sendError(err.entry);
    return undefined;
  }
}

/** Stores the device code and its user code, then answers (RFC 8628 §3.2). Never rejects. */
async function issueDeviceCode(
  route: DeviceAuthorizationRoute,
  exchange: Exchange,
  client: RegisteredClient,
  { scopes, resources }: DeviceGrant,
): Promise<void> {
  const lifetime = client.config.deviceCodeLifetime;
  const family = newFamilyId();
  const device = newFamilyHandle('dc', family);
  const issuedAt = route.now();
  const record: DeviceCodeRecord = {
    v: 1,
    clientId: client.clientId,
    scopes: scopes.scopes,
    ...(resources !== undefined ? { resources } : {}),
    expiresAt: issuedAt + lifetime * 1000,
    status: 'pending',
    family,
  };
  const ttl = lifetime * 1000 + expiredGraceMs;
  let userCode: string;
  try {
    userCode = await storeDeviceAuthorization(route.store, device.key, record, ttl, client.clientId);
  } catch (err) {
    // Never rethrow here: nothing would answer the request, and the rejection would be unhandled.
    if (isStoreUnavailable(err)) exchange.sendError(OAuthErrors.temporarilyUnavailable, { retryAfter: 2 });
    else exchange.sendError(OAuthErrors.serverError);
    return;
  }
  const display = displayUserCode(userCode);
  exchange.sendJson(
    200,
    JSON.stringify({
      device_code: device.handle,
      user_code: display,
      verification_uri: route.verificationUri,
      verification_uri_complete: `${route.verificationUri}?user_code=${display}`,
      expires_in: lifetime,
      interval: client.config.pollingInterval,
    }),
  );
}

/**
 * Writes one device authorization: the device code's record, then its user code, claimed
 * atomically (a user code is short enough to collide now and then: drawn again if taken). Resolves
 * the user code. Exported for the bench, which measures what these writes hold in Redis.
 */
export async function storeDeviceAuthorization(
  store: Store,
  deviceKey: StoreKey,
  record: DeviceCodeRecord,
  ttl: number,
  clientId: string,
): Promise<string> {
  await store.set(deviceKey, record, ttl);
  for (let attempt = 0; attempt < 5; attempt++) {
    const code = newUserCode();
    const pointer: UserCodeRecord = { deviceKey, clientId };
    const stored = await store.putIfAbsent<UserCodeRecord>(userCodeKey(code), pointer, ttl);
    if (stored.deviceKey.id === deviceKey.id) return code;
  }
  throw new Error('could not draw a free user code');
}
