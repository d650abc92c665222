import type { UserConfig } from '../../core/worker_config.js';
import { verifyPassword } from '../../core/crypto/password_hash.js';
import {
  GrantValidationResult,
  type ResourceOwnerPasswordValidationContext,
  type ResourceOwnerPasswordValidator,
} from '../../core/validator_api.js';

/**
 * The built-in password check against the config's `users`. A user matches only within the
 * requested identity provider (`idp:`, default `local`) and tenant (`tenant:`; none requested
 * matches only users without a tenant). Every failure costs one password verification, against a
 * dummy hash when no user matches, so timing tells nothing about which part was wrong.
 */
export class ConfigUserPasswordValidator implements ResourceOwnerPasswordValidator {
  readonly kind = 'resource_owner_password';
  private readonly users = new Map<string, UserConfig>();

  constructor(
    users: readonly UserConfig[],
    /** A hash with the same cost as real ones, verified when no user matches. */
    private readonly dummyHash: string,
  ) {
    for (const user of users) this.users.set(userKey(user.username, user.idp, user.tenant), user);
  }

  async validate(context: ResourceOwnerPasswordValidationContext): Promise<void> {
    const { request } = context;
    const user = this.users.get(userKey(context.userName, request.idp ?? 'local', request.tenant));
    const passwordMatches = await verifyPassword(context.password, user?.passwordHash ?? this.dummyHash);
    if (user === undefined || !passwordMatches || !user.enabled) return; // stays invalid_grant
    context.result = GrantValidationResult.success(user.subjectId, 'pwd', { claims: { idp: user.idp } });
  }
}

function userKey(username: string, idp: string, tenant: string | undefined): string {
  return `${idp}\u0000${tenant ?? ''}\u0000${username}`;
}
