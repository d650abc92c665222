/**
 * What the gateway writes to its store for one live refresh-token family and for one pending
 * device code, written with the server's own code and store, with the same keys, records and TTLs
 * as real issuance:
 *
 * - a family as `issueTokens` (workers/grants/token_issuance.ts) starts one for a password
 *   sign-in with `offline_access`: the access token recorded in the family's `at` sub-family (so a
 *   revocation can deny it), then the refresh token record;
 * - a device authorization as the device authorization endpoint writes it
 *   (gateway/endpoints/device_authorization_endpoint.ts `storeDeviceAuthorization`): the device code's
 *   record and its user code.
 */
import { randomUUID } from 'node:crypto';
import { storeDeviceAuthorization } from '../../gateway/endpoints/device_authorization_endpoint.js';
import type { Store } from '../../core/store/store.js';
import type { DeviceCodeRecord } from '../../core/records/device_code_record.js';
import { expiredGraceMs } from '../../core/records/device_code_record.js';
import { newFamilyHandle, newFamilyId, newRefreshHandle } from '../../core/records/refresh_token_handle.js';
import { refreshExpiry, type RefreshTokenRecord } from '../../workers/tokens/refresh_token_record.js';
import { issuedAccessTokenRecord } from '../../core/records/family_revocation.js';

/** The client settings these writes depend on: the schema's defaults unless a config says otherwise. */
export interface RecordClient {
  clientId: string;
  accessTokenLifetime: number;
  absoluteRefreshTokenLifetime: number;
  refreshTokenExpiration: 'absolute' | 'sliding';
  slidingRefreshTokenLifetime: number;
  deviceCodeLifetime: number;
}

/** A password sign-in of `subject` with `api1 offline_access`, as the password grant issues it. */
export async function writeRefreshFamily(store: Store, client: RecordClient, subject: string, now: number): Promise<void> {
  const family = newFamilyId();
  const exp = Math.floor(now / 1000) + client.accessTokenLifetime;
  const issued = issuedAccessTokenRecord(family, { jti: randomUUID(), exp }, now);
  if (issued !== undefined) await store.set(issued.key, issued.value, issued.ttlMs);
  const handle = newRefreshHandle(family);
  const absoluteExpiresAt = now + client.absoluteRefreshTokenLifetime * 1000;
  const record: RefreshTokenRecord = {
    v: 1,
    clientId: client.clientId,
    subject,
    scopes: ['api1', 'offline_access'],
    claims: { auth_time: Math.floor(now / 1000), idp: 'local', amr: ['pwd'] },
    family,
    createdAt: now,
    absoluteExpiresAt,
    expiresAt: refreshExpiry(client, absoluteExpiresAt, now),
  };
  await store.set(handle.key, record, record.expiresAt - now);
}

/** A pending device authorization for `api1 offline_access`, as the device endpoint writes it. */
export async function writeDeviceCode(store: Store, client: RecordClient, now: number): Promise<void> {
  const family = newFamilyId();
  const device = newFamilyHandle('dc', family);
  const record: DeviceCodeRecord = {
    v: 1,
    clientId: client.clientId,
    scopes: ['api1', 'offline_access'],
    expiresAt: now + client.deviceCodeLifetime * 1000,
    status: 'pending',
    family,
  };
  await storeDeviceAuthorization(store, device.key, record, client.deviceCodeLifetime * 1000 + expiredGraceMs, client.clientId);
}
