import { deviceCodeGrantType } from '../../core/grant_types.js';
import { OAuthError, OAuthErrors } from '../../core/oauth_errors.js';
import { parseFamilyHandle } from '../../core/records/refresh_token_handle.js';
import { pollStateKey, type DeviceCodeRecord, type PollState } from '../../core/records/device_code_record.js';
import type { GrantHandler, GrantRequest, GrantServices, TokenResponse } from './grant_handler.js';
import { narrowStoredGrant } from '../../core/rules/scope_narrowing.js';
import { userPolicy } from '../../core/rules/scope_rules.js';
import { issuedAccessTokenRecord } from '../../core/records/family_revocation.js';
import { accessTokenExp } from '../tokens/access_token.js';
import type { FamilyHandle } from '../../core/records/refresh_token_handle.js';
import { randomUUID } from 'node:crypto';
import { derivedRefreshToken, issueTokens, signAccessToken, signIdToken, tokenResponse } from './token_issuance.js';

const invalidDeviceCode = (): OAuthError => new OAuthError(OAuthErrors.invalidDeviceCode);

/**
 * The device access token request (RFC 8628 §3.4, §3.5). Polling state lives in the store, so
 * `slow_down` and the grown interval hold across gateway instances. An approved code is
 * redeemed once, atomically: of any number of concurrent polls exactly one gets the tokens.
 */
export const deviceCodeGrant: GrantHandler = {
  grantType: deviceCodeGrantType,
  async handle(request, services) {
    const { params, client } = request;
    if (params.device_code === undefined) throw new OAuthError(OAuthErrors.missingDeviceCode);
    const handle = parseFamilyHandle('dc', params.device_code);
    if (handle === undefined) throw invalidDeviceCode();
    const { store } = services;
    const now = services.now();

    let record: DeviceCodeRecord | null;
    if (services.profiles === undefined && params.resource === undefined) {
      const found = await redeemInOneTrip(request, services, handle, now);
      if (found.status === 'answered') return found.response;
      record = found.status === 'unchecked' ? found.value : null;
    } else {
      record = await store.get<DeviceCodeRecord>(handle.key);
    }
    if (record === null || record.clientId !== client.clientId) throw invalidDeviceCode();
    if (record.expiresAt <= now) throw new OAuthError(OAuthErrors.deviceCodeExpired);
    if (record.status === 'denied') throw new OAuthError(OAuthErrors.accessDenied);

    if (record.status === 'pending') {
      const pollKey = pollStateKey(handle.key);
      const poll = await store.get<PollState>(pollKey);
      const interval = poll?.interval ?? client.config.pollingInterval;
      const ttl = record.expiresAt - now + 60_000;
      if (poll !== null && now - poll.lastPollAt < interval * 1000) {
        await store.set<PollState>(pollKey, { lastPollAt: now, interval: interval + 5 }, ttl);
        throw new OAuthError(OAuthErrors.slowDown);
      }
      await store.set<PollState>(pollKey, { lastPollAt: now, interval }, ttl);
      throw new OAuthError(OAuthErrors.authorizationPending);
    }

    const subject = record.subject as string;
    // RFC 8707 §2.2, as for a code: narrowed to resources of the device authorization request.
    const narrowed = narrowStoredGrant(services.scopes, client, record, params, 'ignored');
    return issueTokens(
      request,
      services,
      { ...narrowed, subject, claims: record.claims ?? {} },
      {
        openId: { sid: record.sid },
        // A repeated poll after success is ordinary client behaviour, not an attack: refused
        // without revoking what the first poll received (no replayRetentionMs).
        redeem: {
          name: 'device code',
          kind: 'device_code',
          key: handle.key,
          family: record.family,
          clientId: client.clientId,
          invalid: invalidDeviceCode,
        },
      },
    );
  },
};

/**
 * {@link Store.redeemRecord} for an approved code: the checks above (client, approval, expiry, the
 * stored scopes still grantable to the client) made by the store, the code consumed and its
 * refresh token written (with the access token's `~at` entry) in the same step; the tokens are
 * signed after it, from the record it returns (docs/storage.md, "One round trip per
 * redemption"). A pending, denied or expired code, or one whose checks fail, comes back
 * `unchecked` with its record, for the polling rules above; a code redeemed before, or none, is
 * `missing` there too (a repeated poll after success revokes nothing, RFC 8628 §3.5).
 */
async function redeemInOneTrip(
  request: GrantRequest,
  services: GrantServices,
  handle: FamilyHandle,
  now: number,
): Promise<{ status: 'answered'; response: TokenResponse } | { status: 'unchecked'; value: DeviceCodeRecord } | { status: 'missing' }> {
  const { client, params } = request;
  const jti = randomUUID();
  const issued = issuedAccessTokenRecord(handle.family, { jti, exp: accessTokenExp(client, Math.floor(now / 1000)) }, now);
  const refresh = client.config.allowOfflineAccess ? derivedRefreshToken(request, handle.family, now) : undefined;
  const found = await services.store.redeemRecord<DeviceCodeRecord>(
    handle.key,
    {
      equal: { clientId: client.clientId, status: 'approved' },
      later: { expiresAt: now },
      scopes: services.scopes.grantable(client, userPolicy),
    },
    refresh?.derived,
    issued === undefined ? [] : [issued],
  );
  if (found.status === 'unchecked') return found;
  if (found.status !== 'consumed') return { status: 'missing' };
  const record = found.value;
  const narrowed = narrowStoredGrant(services.scopes, client, record, params, 'ignored');
  const grant = { ...narrowed, subject: record.subject as string, claims: record.claims ?? {} };
  const accessToken = signAccessToken(request, services, grant, now, jti);
  const idToken = signIdToken(request, services, grant, { sid: record.sid }, accessToken, now);
  return {
    status: 'answered',
    response: tokenResponse(request, accessToken, grant.scopes.scope, found.derived ? refresh?.handle : undefined, idToken),
  };
}
