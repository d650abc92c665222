import type { WorkerConfig } from './worker_config.js';

/** The claims an ID token carries whatever the scopes (OIDC Core §2, §3.1.3.6). */
const registeredClaims = ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'at_hash', 'sid'] as const;

/**
 * Every claim some ID token can carry: the registered ones, then each identity scope's claim
 * types (workers/tokens/identity_claims.ts releases them). Discovery publishes it as
 * `claims_supported` (OIDC Discovery 1.0 §3), on the gateway thread, so it lives here and not in
 * the ID token builder.
 */
export function supportedIdTokenClaims(config: Pick<WorkerConfig, 'identityResources'>): string[] {
  // By scope name, as IdentityClaims keys them: a name given twice counts with its last claims.
  const claimsByScope = new Map<string, readonly string[]>();
  for (const resource of config.identityResources) claimsByScope.set(resource.name, resource.claims);
  return [...new Set([...registeredClaims, ...[...claimsByScope.values()].flat()])];
}
