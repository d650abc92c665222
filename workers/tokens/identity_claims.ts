import type { WorkerConfig } from '../../core/worker_config.js';

/**
 * The claims a user's identity scopes release (OIDC Core §5.4): each identity resource names its
 * claim types, and the configured user (by subject) holds the values. The ID token and the
 * UserInfo endpoint both answer from here, so the two never disagree.
 */
export class IdentityClaims {
  private readonly claimsByScope = new Map<string, readonly string[]>();
  private readonly userClaims = new Map<string, Readonly<Record<string, unknown>>>();

  constructor(config: Pick<WorkerConfig, 'identityResources' | 'users'>) {
    for (const resource of config.identityResources) this.claimsByScope.set(resource.name, resource.claims);
    for (const user of config.users) this.userClaims.set(user.subjectId, user.claims);
  }

  /**
   * Sets on `target` the claims of `scopes` that `subject` has, from `known` (what the user's
   * authentication produced) and then the configured user, never overwriting a member `target`
   * already has or `sub`. With a profile service, its claims (`profile`) come first and stand in
   * for the configured user (IdentityServer's `IProfileService`; validators/README.md).
   */
  release(
    target: Record<string, unknown>,
    subject: string,
    scopes: Iterable<string>,
    known?: Readonly<Record<string, unknown>>,
    profile?: Readonly<Record<string, unknown>>,
  ): void {
    const user = profile === undefined ? this.userClaims.get(subject) : undefined;
    for (const scope of scopes) {
      for (const type of this.claimsByScope.get(scope) ?? []) {
        if (type in target || type === 'sub') continue;
        const value =
          profile !== undefined && profile[type] !== undefined
            ? profile[type]
            : known !== undefined && known[type] !== undefined
              ? known[type]
              : user?.[type];
        if (value !== undefined) target[type] = value;
      }
    }
  }

  /** The claim types `scopes` release, each once, in config order. */
  claimTypesOf(scopes: Iterable<string>): string[] {
    const types = new Set<string>();
    for (const scope of scopes) for (const type of this.claimsByScope.get(scope) ?? []) types.add(type);
    return [...types];
  }

  isIdentityScope(scope: string): boolean {
    return this.claimsByScope.has(scope);
  }
}
