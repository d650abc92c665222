import type { Logger } from 'pino';
import { OAuthError, OAuthErrors } from '../../core/oauth_errors.js';
import type { RegisteredClient } from '../../core/client_model.js';
import type { ClaimValue, ProfileDataCaller, ProfileService } from '../../core/validator_api.js';
import type { IdentityClaims } from '../tokens/identity_claims.js';
import { checkedGrantClaims, runWithTimeout, validatedClient } from './user_module_calls.js';
import type { ProfileClaims, TokenGrant } from './token_grant.js';

/**
 * Runs the profile service of `validatorsDir` (core/validator_api.ts `ProfileService`,
 * IdentityServer's `IProfileService`) under the validators' rules: within `validatorTimeoutMs`, a
 * throw is `invalid_grant` and a timeout `temporarily_unavailable`, its messages only logged.
 */
export class UserProfiles {
  constructor(
    private readonly service: ProfileService,
    private readonly identityClaims: IdentityClaims,
    private readonly options: { timeoutMs: number; logger: Logger; source: string },
  ) {}

  /**
   * The profile of a user grant about to be issued: refused when the user is no longer active;
   * otherwise the grant with the claims the service gives its access token and, when
   * `withIdToken`, its ID token.
   */
  // The request as far as a profile needs it: not `GrantRequest`, whose services name this class.
  async profiled(
    request: { readonly client: RegisteredClient; readonly grantType: string },
    grant: TokenGrant & { subject: string },
    withIdToken: boolean,
  ): Promise<TokenGrant> {
    const { client, grantType } = request;
    if (!(await this.isActive(grant.subject, client, grantType))) {
      this.options.logger.info({ clientId: client.clientId, grantType }, 'user is not active: token request refused');
      throw new OAuthError(OAuthErrors.invalidGrant);
    }
    const signIn = grant.claims ?? {};
    const scopes = grant.scopes.scopes;
    const accessToken = await this.claims(grant.subject, client, 'access_token', [], scopes, signIn);
    const profile: ProfileClaims = withIdToken
      ? {
          accessToken,
          idToken: await this.claims(
            grant.subject,
            client,
            'id_token',
            this.identityClaims.claimTypesOf(grant.scopes.identityScopes),
            scopes,
            signIn,
          ),
        }
      : { accessToken };
    return { ...grant, profile };
  }

  /** Whether `subject` may still get tokens or UserInfo answers (`caller`: a grant type or `userinfo`). */
  async isActive(subject: string, client: RegisteredClient, caller: string): Promise<boolean> {
    const context = { subject, client: validatedClient(client), caller };
    const active = await this.run((service) => service.isActive(context));
    if (typeof active !== 'boolean') throw this.refused('isActive gave something other than a boolean');
    return active;
  }

  /** The user's claims for `caller`, checked as a validator's are (a registered claim fails closed). */
  async claims(
    subject: string,
    client: RegisteredClient,
    caller: ProfileDataCaller,
    requestedClaimTypes: readonly string[],
    scopes: readonly string[],
    signIn: Readonly<Record<string, ClaimValue>>,
  ): Promise<Readonly<Record<string, ClaimValue>>> {
    const context = {
      subject,
      client: validatedClient(client),
      caller,
      requestedClaimTypes: Object.freeze([...requestedClaimTypes]),
      scopes: Object.freeze([...scopes]),
      signIn: Object.freeze({ ...signIn }),
    };
    const claims = await this.run((service) => service.getProfileData(context));
    const checked = checkedGrantClaims(claims ?? {});
    if (typeof checked === 'string') throw this.refused(checked.replace(/^validator/, 'getProfileData'));
    // `act` says who acts for the user (RFC 8693 §4.1): a grant's to state, not a profile's.
    if (checked.act !== undefined) throw this.refused('getProfileData tried to set the protected claim act');
    return checked;
  }

  private async run<T>(call: (service: ProfileService) => Promise<T>): Promise<T | undefined> {
    let value: T | undefined;
    const step = {
      grantType: 'profile service',
      validate: async () => {
        value = await call(this.service);
      },
    };
    await runWithTimeout(step, undefined, this.options.timeoutMs, this.options.logger);
    return value;
  }

  private refused(reason: string): OAuthError {
    this.options.logger.error({ source: this.options.source, reason }, 'profile service result refused: ' + reason);
    return new OAuthError(OAuthErrors.invalidGrant);
  }
}
