import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { deviceCodeGrantType } from '../workers/grants/device_code.js';
import { userPolicy, type ScopeRules } from '../workers/grants/scope_rules.js';
import { OAuthError, OAuthErrors } from '../workers/protocol/oauth_errors.js';
import { isStoreUnavailable, type Store, type StoreKey } from '../workers/store/store.js';
import {
  displayUserCode,
  expiredGraceMs,
  newUserCode,
  userCodeKey,
  type DeviceCodeRecord,
  type UserCodeRecord,
} from '../workers/tokens/device_code_record.js';
import { newFamilyHandle, newFamilyId } from '../workers/tokens/refresh_token_handle.js';
import { createClientAuthenticationStep, type ClientAuthenticationDeps } from './client_authentication_step.js';
import { createFormEndpoint } from './form_endpoint.js';

export const deviceAuthorizationPath = '/connect/deviceauthorization';
export const devicePagePath = '/device';

export interface DeviceAuthorizationDeps extends ClientAuthenticationDeps {
  scopes: ScopeRules;
  store: Store;
  now?: () => number;
}

/**
 * The device authorization endpoint (RFC 8628 §3.1, §3.2): client authentication as at the token
 * endpoint (public clients by `client_id`), scope rules of SPEC §4, then a device code (a family
 * handle, ≥ 256 bits) and a user code the user types on the `/device` page.
 */
export function createDeviceAuthorizationEndpoint(deps: DeviceAuthorizationDeps): (res: HttpResponse, req: HttpRequest) => void {
  const authenticateClient = createClientAuthenticationStep(deps);
  const now = deps.now ?? Date.now;
  const verificationUri = `${deps.issuer}${devicePagePath}`;
  return createFormEndpoint(OAuthErrors.deviceAuthorizationPostOnly, (request) => {
    const client = authenticateClient(request);
    if (client === undefined) return;
    const { exchange, params } = request;
    if (!client.grantTypes.has(deviceCodeGrantType)) {
      exchange.sendError(OAuthErrors.deviceFlowNotAllowed);
      return;
    }
    let scopes;
    try {
      scopes = deps.scopes.resolve(client, params.scope, userPolicy);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      exchange.sendError(err.entry);
      return;
    }
    const lifetime = client.config.deviceCodeLifetime;
    const family = newFamilyId();
    const device = newFamilyHandle('dc', family);
    const issuedAt = now();
    const record: DeviceCodeRecord = { v: 1, clientId: client.clientId, scopes: scopes.scopes, expiresAt: issuedAt + lifetime * 1000, status: 'pending', family };
    const ttl = lifetime * 1000 + expiredGraceMs;
    storeDeviceAuthorization(deps.store, device.key, record, ttl, client.clientId).then(
      (userCode) => {
        const display = displayUserCode(userCode);
        exchange.sendJson(
          200,
          JSON.stringify({
            device_code: device.handle,
            user_code: display,
            verification_uri: verificationUri,
            verification_uri_complete: `${verificationUri}?user_code=${display}`,
            expires_in: lifetime,
            interval: client.config.pollingInterval,
          }),
        );
      },
      // Never rethrow here: nothing would answer the request, and the rejection would be unhandled.
      (err: unknown) => {
        if (isStoreUnavailable(err)) exchange.sendError(OAuthErrors.temporarilyUnavailable, { retryAfter: 2 });
        else exchange.sendError(OAuthErrors.serverError);
      },
    );
  });
}

// A user code is short enough to collide now and then: claim it atomically, draw again if taken.
async function storeDeviceAuthorization(store: Store, deviceKey: StoreKey, record: DeviceCodeRecord, ttl: number, clientId: string): Promise<string> {
  await store.set(deviceKey, record, ttl);
  for (let attempt = 0; attempt < 5; attempt++) {
    const code = newUserCode();
    const pointer: UserCodeRecord = { deviceKey, clientId };
    const stored = await store.putIfAbsent<UserCodeRecord>(userCodeKey(code), pointer, ttl);
    if (stored.deviceKey.id === deviceKey.id) return code;
  }
  throw new Error('could not draw a free user code');
}
