import { deviceCodeGrantType } from '../../core/grant_types.js';
import { OAuthError, OAuthErrors } from '../../core/oauth_errors.js';
import { parseFamilyHandle } from '../../core/records/refresh_token_handle.js';
import { pollStateKey, type DeviceCodeRecord, type PollState } from '../../core/records/device_code_record.js';
import type { GrantHandler } from './grant_handler.js';
import { narrowStoredGrant } from '../../core/rules/scope_narrowing.js';
import { issueTokens } from './token_issuance.js';

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

    const record = await store.get<DeviceCodeRecord>(handle.key);
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
