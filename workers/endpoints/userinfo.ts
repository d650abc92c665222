import { BearerErrors, type BearerErrorEntry } from '../protocol/oauth_errors.js';
import type { TokenTaskResult } from '../protocol/token_task.js';
import type { IdentityClaims } from '../tokens/identity_claims.js';
import type { AccessTokenValidator } from '../tokens/token_validator.js';

export interface UserInfoServices {
  readonly tokenValidator: AccessTokenValidator;
  readonly identityClaims: IdentityClaims;
}

/**
 * The UserInfo endpoint (OIDC Core §5.3): for one of this issuer's access tokens that grants
 * `openid`, the claims of its identity scopes (§5.4), with `sub`. The same checks as introspection
 * (signature, `typ: at+jwt`, issuer, time, the revocation deny list); an ID token is not an access
 * token and is refused. A claim the configured user lacks comes from the access token when the
 * token carries it (claims an extension grant or a password validator set).
 */
export async function userInfo(token: string, services: UserInfoServices): Promise<TokenTaskResult> {
  const verified = await services.tokenValidator.verify(token);
  if (!verified.ok) return answer(BearerErrors.invalidToken);
  const { payload } = verified;
  const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ') : [];
  if (!scopes.includes('openid')) return answer(BearerErrors.notOpenId);
  const subject = payload.sub as string;
  const claims: Record<string, unknown> = { sub: subject };
  services.identityClaims.release(claims, subject, scopes, payload);
  return [200, JSON.stringify(claims), null];
}

function answer(error: BearerErrorEntry): TokenTaskResult {
  return [error.status, error.body, null];
}
