import { OAuthError, OAuthErrors } from '../protocol/oauth_errors.js';
import { parseFamilyHandle } from '../tokens/refresh_token_handle.js';
import type { AuthorizationCodeRecord } from '../tokens/authorization_code_record.js';
import { revokeRefreshFamily } from '../tokens/token_revocation.js';
import type { GrantHandler } from './grant_handler.js';
import { verifyCodeVerifier } from './pkce.js';
import { userPolicy } from './scope_rules.js';
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
    const { store } = services;
    const now = services.now();

    const record = await store.get<AuthorizationCodeRecord>(handle.key);
    if (record === null) {
      const used = await store.consume<AuthorizationCodeRecord>(handle.key);
      if (used.status === 'replayed' && used.value.clientId === client.clientId) {
        // RFC 6749 §4.1.2: a code used twice revokes what it was exchanged for.
        await revokeRefreshFamily(store, handle.family, client.config.absoluteRefreshTokenLifetime * 1000, now);
        services.logger.warn({ clientId: client.clientId }, 'authorization code redeemed twice: its tokens are revoked');
      }
      throw invalidCode();
    }
    if (record.clientId !== client.clientId || record.redirectUri !== redirectUri) throw invalidCode();

    const verifier = params.code_verifier;
    if (record.codeChallenge !== undefined) {
      if (verifier === undefined || !verifyCodeVerifier(verifier, record.codeChallenge)) throw invalidCode();
    } else if (verifier !== undefined) {
      // A verifier for a code issued without a challenge: a downgrade attempt (RFC 9700 §2.1.1).
      throw invalidCode();
    }

    const scopes = services.scopes.resolve(client, record.scopes.join(' '), userPolicy);
    return issueTokens(
      request,
      services,
      { scopes, subject: record.subject, claims: record.claims },
      { openId: { nonce: record.nonce, sid: record.sid }, redeem: { key: handle.key, family: record.family, invalid: invalidCode } },
    );
  },
};
