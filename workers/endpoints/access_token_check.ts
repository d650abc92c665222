import { BearerErrors } from '../../core/oauth_errors.js';
import { errorResult, successResult, type AccessTokenItem, type TokenTaskResult } from '../../wire/token_task.js';
import { boundCertificateOf, boundKeyOf, type AccessTokenValidator } from '../tokens/token_validator.js';

/**
 * A bearer token for the admin API (docs/operations.md, "Admin API"): one of this issuer's access
 * tokens, checked as UserInfo checks one (signature over the published keys, `typ: at+jwt`,
 * issuer, lifetime, the revocation deny list). A sender-constrained token (RFC 9449 §7, RFC 8705
 * §3) is refused: the admin API takes no proof, so such a token would count as a bearer token.
 * The answer names the token's `scope` and `client_id`; the gateway compares the scope.
 * @throws StoreUnavailableError when the deny list cannot be read (answered 503).
 */
export async function checkAccessToken(
  item: AccessTokenItem,
  services: { readonly tokenValidator: AccessTokenValidator },
): Promise<TokenTaskResult> {
  const verified = await services.tokenValidator.verify(item.params.token ?? '');
  if (!verified.ok) return errorResult(BearerErrors.invalidToken);
  const { payload } = verified;
  if (boundKeyOf(payload) !== undefined || boundCertificateOf(payload) !== undefined) return errorResult(BearerErrors.invalidToken);
  const scope = typeof payload.scope === 'string' ? payload.scope : '';
  return successResult(JSON.stringify({ scope, client_id: payload.client_id }));
}
