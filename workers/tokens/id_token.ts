import { hash } from 'node:crypto';
import type { WorkerConfig } from '../../core/worker_config.js';
import type { RegisteredClient } from '../../core/client_model.js';
import type { GrantedScopes } from '../../core/rules/scope_rules.js';
import type { ClaimValue } from '../../core/validator_api.js';
import type { SigningAlgorithm } from '../../core/signing_key.js';
import { IdentityClaims } from './identity_claims.js';

export interface IdTokenInput {
  client: RegisteredClient;
  subject: string;
  scopes: GrantedScopes;
  /** Epoch seconds of the user's authentication (kept across refreshes, OIDC Core §12.2). */
  authTime: number | undefined;
  nonce?: string | undefined;
  sid?: string | undefined;
  /** The access token issued with it, for `at_hash`. */
  accessToken: string;
  /** Claims the user's authentication produced (a custom password validator's, say). */
  claims?: Readonly<Record<string, ClaimValue>> | undefined;
  /** The profile service's claims for the ID token, which replace the configured user's. */
  profileClaims?: Readonly<Record<string, ClaimValue>> | undefined;
  /** Epoch seconds. */
  now: number;
}

/**
 * ID tokens (OIDC Core §2, §3.1.3.6): the registered claims plus the claims of the granted
 * identity scopes, taken from the configured user (by subject) and the authentication's claims.
 */
export class IdTokenBuilder {
  private readonly claims: IdentityClaims;

  constructor(
    config: Pick<WorkerConfig, 'identityResources' | 'users'>,
    private readonly issuer: string,
    private readonly alg: SigningAlgorithm,
  ) {
    this.claims = new IdentityClaims(config);
  }

  build(input: IdTokenInput): Record<string, unknown> {
    const payload: Record<string, unknown> = {
      iss: this.issuer,
      sub: input.subject,
      aud: input.client.clientId,
      exp: input.now + input.client.config.identityTokenLifetime,
      iat: input.now,
    };
    if (input.authTime !== undefined) payload.auth_time = input.authTime;
    if (input.nonce !== undefined) payload.nonce = input.nonce;
    payload.at_hash = tokenHash(input.accessToken, this.alg);
    if (input.sid !== undefined) payload.sid = input.sid;
    this.claims.release(payload, input.subject, input.scopes.identityScopes, input.claims, input.profileClaims);
    return payload;
  }
}

/**
 * `at_hash` / `c_hash` (OIDC Core §3.1.3.6): the left half of the hash of the token's ASCII, with
 * the hash of the signing algorithm (SHA-512 for Ed25519).
 */
export function tokenHash(token: string, alg: SigningAlgorithm): string {
  // Tokens are ASCII (base64url and dots): their UTF-8 bytes are their ASCII bytes.
  const digest = hash(alg === 'EdDSA' ? 'sha512' : 'sha256', token, 'buffer');
  return digest.subarray(0, digest.length / 2).toString('base64url');
}
