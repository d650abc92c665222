import { OAuthError, OAuthErrors } from '../../core/oauth_errors.js';
import type { RegisteredClient } from '../../core/client_model.js';
import type { TaskFacts } from '../../wire/task_facts.js';
import { parseFamilyHandle, type FamilyHandle } from '../../core/records/refresh_token_handle.js';
import type { AuthorizationCodeRecord } from '../../core/records/authorization_code_record.js';
import type { GrantHandler, GrantRequest, GrantServices, TokenResponse } from './grant_handler.js';
import { codeChallengeOf, verifyCodeVerifier } from '../../core/rules/pkce.js';
import { refuseOutcome, refuseRedeemed, type SingleUseItem } from './redeem_once.js';
import { narrowStoredGrant } from '../../core/rules/scope_narrowing.js';
import { userPolicy } from '../../core/rules/scope_rules.js';
import { issuedAccessTokenRecord } from '../../core/records/family_revocation.js';
import { accessTokenExp } from '../tokens/access_token.js';
import { randomUUID } from 'node:crypto';
import { derivedRefreshToken, issueTokens, signAccessToken, signIdToken, tokenResponse } from './token_issuance.js';

const invalidCode = (): OAuthError => new OAuthError(OAuthErrors.invalidAuthorizationCode);

/**
 * RFC 6749 §4.1.3 with PKCE (RFC 7636, S256 only). Every check runs on the stored record before
 * the code is consumed, so a request that fails them leaves the code to its client; the consume
 * itself happens in the same atomic step that stores the refresh token.
 */
export const authorizationCodeGrant: GrantHandler = {
  grantType: 'authorization_code',
  async handle(request, services) {
    const { params, client } = request;
    const code = params.code;
    const redirectUri = params.redirect_uri;
    if (code === undefined || redirectUri === undefined) {
      throw new OAuthError(OAuthErrors.missingCodeOrRedirectUri);
    }
    const handle = parseFamilyHandle('code', code);
    if (handle === undefined) throw invalidCode();
    const item = codeItem(handle, client, request.facts);

    const challenge = oneTripChallenge(request, services);
    if (challenge !== undefined) return redeemInOneTrip(request, services, handle, item, challenge);
    const record = await services.store.get<AuthorizationCodeRecord>(handle.key);
    if (record === null) return refuseRedeemed(services, item);
    return redeemRecord(request, services, item, record);
  },
};

/**
 * Whether every check can be made by the store on the record it holds, and then the challenge
 * the code must have (`null`: none): no profile service to ask (a validator call no script can
 * make), no `resource` parameter to narrow by, and a verifier, if any, that is well-formed.
 */
function oneTripChallenge(request: GrantRequest, services: GrantServices): string | null | undefined {
  const { params } = request;
  if (services.profiles !== undefined || params.resource !== undefined) return undefined;
  if (params.code_verifier === undefined) return null;
  return codeChallengeOf(params.code_verifier);
}

/**
 * {@link Store.redeemRecord}: the checks of {@link redeemRecord} (client, redirect URI, PKCE, DPoP
 * binding, the stored scopes still grantable to the client) made by the store, the code consumed
 * and its refresh token written (with the access token's `~at` entry, its `jti` drawn before it
 * is signed) in the same step; the tokens are signed after it, from the record it returns
 * (docs/storage.md, "One round trip per redemption"). A record the checks do not pass is decided
 * as before, from the record the call returned.
 */
async function redeemInOneTrip(
  request: GrantRequest,
  services: GrantServices,
  handle: FamilyHandle,
  item: SingleUseItem<AuthorizationCodeRecord>,
  challenge: string | null,
): Promise<TokenResponse> {
  const { client, params } = request;
  const now = services.now();
  const jti = randomUUID();
  const issued = issuedAccessTokenRecord(handle.family, { jti, exp: accessTokenExp(client, Math.floor(now / 1000)) }, now);
  const refresh = client.config.allowOfflineAccess ? derivedRefreshToken(request, handle.family, now) : undefined;
  const found = await services.store.redeemRecord<AuthorizationCodeRecord>(
    handle.key,
    {
      equal: { clientId: client.clientId, redirectUri: params.redirect_uri as string, codeChallenge: challenge },
      bound: { dpopJkt: request.jkt },
      scopes: services.scopes.grantable(client, userPolicy),
    },
    refresh?.derived,
    issued === undefined ? [] : [issued],
  );
  switch (found.status) {
    case 'consumed': {
      const record = found.value;
      const narrowed = narrowStoredGrant(services.scopes, client, record, params, 'ignored');
      const grant = { ...narrowed, subject: record.subject, claims: record.claims };
      const accessToken = signAccessToken(request, services, grant, now, jti);
      const idToken = signIdToken(request, services, grant, { nonce: record.nonce, sid: record.sid }, accessToken, now);
      return tokenResponse(request, accessToken, grant.scopes.scope, found.derived ? refresh?.handle : undefined, idToken);
    }
    case 'unchecked':
      return redeemRecord(request, services, item, found.value);
    default:
      return refuseOutcome(services, item, found);
  }
}

/** The redemption of a record read from the store: every check here, then the consume. */
async function redeemRecord(
  request: GrantRequest,
  services: GrantServices,
  item: SingleUseItem<AuthorizationCodeRecord>,
  record: AuthorizationCodeRecord,
): Promise<TokenResponse> {
  const { params, client } = request;
  const redirectUri = params.redirect_uri;
  if (record.clientId !== client.clientId || record.redirectUri !== redirectUri) throw invalidCode();

  const verifier = params.code_verifier;
  if (record.codeChallenge !== undefined) {
    if (verifier === undefined || !verifyCodeVerifier(verifier, record.codeChallenge)) throw invalidCode();
  } else if (verifier !== undefined) {
    // A verifier for a code issued without a challenge: a downgrade attempt (RFC 9700 §2.1.1).
    throw invalidCode();
  }
  // RFC 9449 §10.1: a code bound to a key is redeemed only with a proof by that key; checked
  // before the consume, so the code stays its client's.
  if (record.dpopJkt !== undefined && request.jkt !== record.dpopJkt) throw new OAuthError(OAuthErrors.codeBoundToDPoPKey);

  // RFC 8707 §2.2: the redemption may narrow to resources of the authorization request; the
  // refresh token stays bound to the whole grant.
  const narrowed = narrowStoredGrant(services.scopes, client, record, params, 'ignored');
  return issueTokens(
    request,
    services,
    { ...narrowed, subject: record.subject, claims: record.claims },
    { openId: { nonce: record.nonce, sid: record.sid }, redeem: item },
  );
}

/**
 * RFC 6749 §4.1.2: a code used twice revokes the tokens issued for it, whose family it names; the
 * revocation is remembered as long as a refresh token of that family could live.
 */
function codeItem(handle: FamilyHandle, client: RegisteredClient, facts: TaskFacts | undefined): SingleUseItem<AuthorizationCodeRecord> {
  return {
    name: 'authorization code',
    kind: 'authorization_code',
    key: handle.key,
    family: handle.family,
    clientId: client.clientId,
    invalid: invalidCode,
    replayRetentionMs: () => client.config.absoluteRefreshTokenLifetime * 1000,
    facts,
  };
}
