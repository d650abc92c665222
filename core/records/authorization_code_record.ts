import type { ClaimValue } from '../validator_api.js';

/** What the store keeps for one authorization code (keyed by SHA-256 of the code). */
export interface AuthorizationCodeRecord {
  readonly v: 1;
  readonly clientId: string;
  /** Exactly as sent in the authorization request; the token request must repeat it. */
  readonly redirectUri: string;
  readonly subject: string;
  readonly scopes: readonly string[];
  /**
   * The authorization request's `resource` values (RFC 8707 §2.1): the redemption may narrow to
   * some of them. Absent (and in records written before it existed): every resource of `scopes`.
   */
  readonly resources?: readonly string[] | undefined;
  /** From the user's authentication: `auth_time`, `idp`, `amr`, `tenant`, … */
  readonly claims: Readonly<Record<string, ClaimValue>>;
  readonly nonce?: string | undefined;
  readonly sid?: string | undefined;
  /** S256 only (RFC 7636 §4.2, RFC 9700 §2.1.1). */
  readonly codeChallenge?: string | undefined;
  /**
   * RFC 9449 §10: the JWK thumbprint of the DPoP key the authorization request bound the code to
   * (`dpop_jkt`, or the proof at the pushed authorization request endpoint); the token request
   * must carry a proof by that key. Absent: unbound.
   */
  readonly dpopJkt?: string | undefined;
  /** The family its tokens will belong to: redeeming it twice revokes them. */
  readonly family: string;
  /** Epoch ms. */
  readonly createdAt: number;
}
