import { BearerErrors, DPoPErrors, OAuthError, OAuthErrors, type BearerErrorEntry } from '../../core/oauth_errors.js';
import type { RegisteredClient } from '../../core/client_model.js';
import type { ClaimValue } from '../../core/validator_api.js';
import type { UserProfiles } from '../grants/user_profiles.js';
import { errorResult, successResult, type TokenTaskResult, type UserInfoItem } from '../../wire/token_task.js';
import { verifyDPoPProof, type DPoPProofServices } from '../dpop/dpop_proof.js';
import type { IdentityClaims } from '../tokens/identity_claims.js';
import { boundCertificateOf, boundKeyOf, type AccessTokenValidator } from '../tokens/token_validator.js';

export interface UserInfoServices {
  readonly tokenValidator: AccessTokenValidator;
  readonly identityClaims: IdentityClaims;
  readonly dpopProofs: DPoPProofServices;
  /** The endpoint's URL as discovery publishes it, through `normalizeHtu`: what a proof's `htu` must name. */
  readonly userInfoHtu: string;
  /** The profile service, when `validatorsDir` has one: it says who is active and holds the claims. */
  readonly profiles?: UserProfiles | undefined;
  readonly clients: ReadonlyMap<string, RegisteredClient>;
}

/**
 * The UserInfo endpoint (OIDC Core §5.3): for one of this issuer's access tokens that grants
 * `openid`, the claims of its identity scopes (§5.4), with `sub`. The same checks as introspection
 * (signature, `typ: at+jwt`, issuer, time, the revocation deny list); an ID token is not an access
 * token and is refused. A claim the configured user lacks comes from the access token when the
 * token carries it (claims an extension grant or a password validator set).
 *
 * A DPoP-bound token (RFC 9449 §7) is accepted only with the DPoP scheme and a proof for this
 * request, this token (`ath`) and the key it is bound to; as a bearer token it is refused.
 */
export async function userInfo(item: UserInfoItem, services: UserInfoServices): Promise<TokenTaskResult> {
  const token = item.params.access_token ?? '';
  const verified = await services.tokenValidator.verify(token);
  if (!verified.ok) return answer(BearerErrors.invalidToken);
  const { payload } = verified;
  // RFC 8705 §3: a certificate-bound token only over a connection with that certificate.
  const boundCertificate = boundCertificateOf(payload);
  if (boundCertificate !== undefined && item.x5t !== boundCertificate) return answer(BearerErrors.certificateMismatch);
  const boundKey = boundKeyOf(payload);
  if (item.dpop === undefined) {
    if (boundKey !== undefined) return answer(DPoPErrors.boundTokenAsBearer);
  } else {
    if (boundKey === undefined) return answer(DPoPErrors.tokenNotBound);
    if (item.dpop.proof.length === 0) return answer(DPoPErrors.proofInvalid);
    const proof = await verifyDPoPProof(
      item.dpop.proof,
      { htm: item.dpop.htm, htu: services.userInfoHtu, accessToken: token, requireNonce: false },
      services.dpopProofs,
    );
    if (!proof.ok || proof.jkt !== boundKey) return answer(DPoPErrors.proofInvalid);
  }
  const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ') : [];
  if (!scopes.includes('openid')) return answer(BearerErrors.notOpenId);
  const subject = payload.sub as string;
  const claims: Record<string, unknown> = { sub: subject };
  let profile: Readonly<Record<string, ClaimValue>> | undefined;
  if (services.profiles !== undefined) {
    const client = services.clients.get(payload.client_id as string);
    // A token of a client that is no longer configured is as good as revoked.
    if (client === undefined) return answer(BearerErrors.invalidToken);
    try {
      if (!(await services.profiles.isActive(subject, client, 'userinfo'))) return answer(BearerErrors.invalidToken);
      const types = services.identityClaims.claimTypesOf(scopes);
      profile = await services.profiles.claims(subject, client, 'userinfo', types, scopes, payload as Record<string, ClaimValue>);
    } catch (err) {
      // A profile service that failed is the server's fault, not the token's: 500, or 503 on a timeout.
      if (err instanceof OAuthError && err.status !== 503) throw new OAuthError(OAuthErrors.serverError);
      throw err;
    }
  }
  services.identityClaims.release(claims, subject, scopes, payload, profile);
  return successResult(JSON.stringify(claims));
}

function answer(error: BearerErrorEntry): TokenTaskResult {
  return errorResult(error);
}
