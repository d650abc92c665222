import { OAuthError, OAuthErrors } from '../../core/oauth_errors.js';
import type { RegisteredClient } from '../../core/client_model.js';
import type { TaskFacts } from '../../wire/task_facts.js';
import { parseFamilyHandle, type FamilyHandle } from '../../core/records/refresh_token_handle.js';
import type { AuthorizationCodeRecord } from '../../core/records/authorization_code_record.js';
import type { GrantHandler } from './grant_handler.js';
import { verifyCodeVerifier } from '../../core/rules/pkce.js';
import { refuseRedeemed, type SingleUseItem } from './redeem_once.js';
import { narrowStoredGrant } from '../../core/rules/scope_narrowing.js';
import { issueTokens } from './token_issuance.js';

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

    const record = await services.store.get<AuthorizationCodeRecord>(handle.key);
    if (record === null) return refuseRedeemed(services, item);
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
  },
};

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
