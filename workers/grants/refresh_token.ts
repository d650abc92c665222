import { OAuthError, OAuthErrors } from '../protocol/oauth_errors.js';
import { newRefreshHandle, parseRefreshHandle, type FamilyHandle } from '../tokens/refresh_token_handle.js';
import { refreshExpiry, type RefreshTokenRecord } from '../tokens/refresh_token_record.js';
import { issuedAccessTokenRecord, recordIssuedAccessToken } from '../tokens/token_revocation.js';
import { FamilyRevokedError, isStoreUnavailable, type Store, type StoreKey } from '../store/store.js';
import type { GrantHandler } from './grant_handler.js';
import { redeemOnce, refuseRedeemed, type SingleUseItem } from './redeem_once.js';
import { userPolicy, type GrantedScopes, type ScopeRules } from './scope_rules.js';
import type { RegisteredClient } from '../protocol/client_model.js';
import { signAccessToken, signIdToken, tokenResponse } from './token_issuance.js';

const invalidGrant = (): OAuthError => new OAuthError(OAuthErrors.invalidRefreshToken);

/**
 * RFC 6749 §6 with rotation and reuse detection (RFC 9700 §4.14.2). `oneTimeOnly` tokens are
 * replaced in one atomic store operation: of any number of concurrent refreshes exactly one
 * wins, and a retired token presented again revokes its whole family, access tokens included.
 */
export const refreshTokenGrant: GrantHandler = {
  grantType: 'refresh_token',
  async handle(request, services) {
    const presented = request.params.refresh_token;
    if (presented === undefined) throw new OAuthError(OAuthErrors.missingRefreshToken);
    const handle = parseRefreshHandle(presented);
    if (handle === undefined) throw invalidGrant();
    const { store } = services;
    const client = request.client;
    const now = services.now();
    const item = refreshTokenItem(handle, client.clientId);

    const record = await store.get<RefreshTokenRecord>(handle.key);
    // Gone or retired; a retired one presented again revokes its family.
    if (record === null) return refuseRedeemed(services, item);
    // Bound to its client; another client's attempt leaves it untouched.
    if (record.clientId !== client.clientId) throw invalidGrant();
    if (record.expiresAt <= now || record.absoluteExpiresAt <= now) throw invalidGrant();

    const scopes = narrowedScopes(services.scopes, client, record, request.params.scope);
    const grant = { scopes, subject: record.subject, claims: record.claims };
    const accessToken = signAccessToken(request, services, grant, now);
    // OIDC Core §12.2: same sub, aud and auth_time; no nonce.
    const idToken = signIdToken(request, services, grant, record.openId, accessToken, now);
    const expiresAt = refreshExpiry(client.config, record.absoluteExpiresAt, now);

    if (client.config.refreshTokenUsage === 'reUse') {
      // Before the sliding expiry moves, so a family revocation racing this refresh finds it.
      await recordIssuedAccessToken(store, record.family, accessToken, now);
      if (expiresAt !== record.expiresAt) {
        try {
          await store.set(handle.key, { ...record, expiresAt }, expiresAt - now);
        } catch (err) {
          if (err instanceof FamilyRevokedError) throw invalidGrant();
          throw err;
        }
      }
      return tokenResponse(request, accessToken, scopes.scope, presented, idToken);
    }

    const successor = newRefreshHandle(record.family);
    try {
      // The access token is recorded in the rotation's own atomic step: a family revocation
      // either comes first and refuses the rotation, or comes after and finds the token.
      await redeemOnce(services, item, {
        key: successor.key,
        value: { ...record, expiresAt },
        ttlMs: expiresAt - now,
        companion: issuedAccessTokenRecord(record.family, accessToken, now),
      });
    } catch (err) {
      // A rotation whose answer was late may still have happened: then the successor exists and
      // is this client's, and answering 503 would lose it (the retry would count as reuse).
      if (isStoreUnavailable(err) && (await appliedLate(store, successor.key))) {
        return tokenResponse(request, accessToken, scopes.scope, successor.handle, idToken);
      }
      throw err;
    }
    return tokenResponse(request, accessToken, scopes.scope, successor.handle, idToken);
  },
};

/**
 * RFC 9700 §4.14.2: a refresh token presented after it was rotated may be held by someone else,
 * so its whole family goes, remembered as long as any token of the family could live.
 */
function refreshTokenItem(handle: FamilyHandle, clientId: string): SingleUseItem<RefreshTokenRecord> {
  return {
    name: 'refresh token',
    key: handle.key,
    family: handle.family,
    clientId,
    invalid: invalidGrant,
    replayRetentionMs: (retired, now) => Math.max(1000, retired.absoluteExpiresAt - now),
  };
}

/** A refresh may ask for less than was granted, never more (RFC 6749 §6). */
function narrowedScopes(
  rules: ScopeRules,
  client: RegisteredClient,
  record: RefreshTokenRecord,
  requested: string | undefined,
): GrantedScopes {
  const wanted = requested?.split(' ').filter((scope) => scope.length > 0) ?? [];
  // An empty `scope` is an omitted one: the original grant, never the client's defaults.
  if (wanted.length === 0) return rules.resolve(client, record.scopes.join(' '), userPolicy);
  const granted = new Set(record.scopes);
  for (const scope of wanted) {
    if (!granted.has(scope)) throw new OAuthError(OAuthErrors.scopeExceedsGrant);
  }
  return rules.resolve(client, wanted.join(' '), userPolicy);
}

async function appliedLate(store: Store, successor: StoreKey): Promise<boolean> {
  try {
    return (await store.get(successor)) !== null;
  } catch {
    return false;
  }
}
