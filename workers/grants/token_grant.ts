import type { ClaimValue } from '../../core/validator_api.js';
import type { GrantedScopes } from '../../core/rules/scope_rules.js';

/** What a grant decided; the shared last step turns it into tokens. */
export interface TokenGrant {
  scopes: GrantedScopes;
  subject?: string;
  claims?: Readonly<Record<string, ClaimValue>>;
  /** What the profile service said for this issuance (user_profiles.ts); never stored. */
  profile?: ProfileClaims;
  /**
   * RFC 8707 §2.2: the grant a refresh token stays bound to when `resource` narrowed this access
   * token (its scopes, and its resources if it named some); by default the access token's scopes.
   */
  bound?: { readonly scopes: readonly string[]; readonly resources?: readonly string[] | undefined };
}

/** What a profile service said about a user for one issuance (never stored: asked again each time). */
export interface ProfileClaims {
  /** Added to the access token; never a registered claim. */
  readonly accessToken: Readonly<Record<string, ClaimValue>>;
  /** The source of the ID token's identity claims, when one is issued. */
  readonly idToken?: Readonly<Record<string, ClaimValue>>;
}
