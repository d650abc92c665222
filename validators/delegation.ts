/**
 * The delegation extension grant: a middle-tier API trades the user's access token for a token to
 * call a back-end API. The new token keeps the user's `sub` and sign-in (`auth_time`, `idp`,
 * `amr`, `tenant`), carries only the requested scope, and names the calling client in `act`
 * (RFC 8693 §4.1), nested when the incoming token already had an actor, so the whole call path
 * stays visible.
 *
 * The incoming token must be one the caller was given: a user's token (not a client-only one:
 * RFC 9068 §5 warns of the `sub` confusion) whose `aud` names an API resource the calling client
 * is (its `audiences`), and, when it carries `may_act` (RFC 8693 §4.4), one that names the caller.
 *
 * Request: `grant_type=delegation&token=<user access token>&scope=api2`.
 */
import {
  GrantValidationResult,
  TokenRequestErrors,
  type Claim,
  type ExtensionGrantValidationContext,
  type ExtensionGrantValidator,
  type ValidatorServices,
} from 'tessera/validator';

export default class DelegationGrantValidator implements ExtensionGrantValidator {
  readonly grantType = 'delegation';

  constructor(private readonly services: ValidatorServices) {}

  async validate(context: ExtensionGrantValidationContext): Promise<void> {
    const client = context.request.client;
    // Every refusal is the same invalid_grant; the reason goes to the log only.
    const refuse = (reason: string): void => {
      this.services.logger.info({ clientId: client.clientId, reason }, 'delegation refused');
      context.result = GrantValidationResult.error(TokenRequestErrors.InvalidGrant);
    };

    const userToken = context.request.raw.get('token');
    if (userToken === null) return refuse('no token parameter');

    const validated = await this.services.tokenValidator.validateAccessToken(userToken);
    if (validated.isError) return refuse(validated.error ?? 'invalid token');

    const sub = claimOf(validated.claims, 'sub');
    if (sub === undefined) return refuse('token without sub');
    // Only a user's sign-in records auth_time; a client_credentials token has none.
    if (claimOf(validated.claims, 'auth_time') === undefined) return refuse("not a user's token");
    const audiences = validated.claims.filter((c) => c.type === 'aud').map((c) => c.value);
    if (!audiences.some((aud) => client.audiences.includes(aud))) return refuse('token not issued to an API this client is');
    if (!mayAct(claimOf(validated.claims, 'may_act'), client.clientId)) return refuse('may_act names another party');

    const act: Record<string, unknown> = { client_id: client.clientId };
    const priorActor = claimOf(validated.claims, 'act');
    if (priorActor !== undefined) act.act = JSON.parse(priorActor) as unknown;

    context.result = GrantValidationResult.success(sub, this.grantType, { claims: { act }, subjectToken: validated });
  }
}

function claimOf(claims: readonly Claim[], type: string): string | undefined {
  return claims.find((c) => c.type === type)?.value;
}

/** RFC 8693 §4.4: when the token names who may act for the user, the caller must be that party. */
function mayAct(text: string | undefined, clientId: string): boolean {
  if (text === undefined) return true;
  try {
    const value = JSON.parse(text) as { client_id?: unknown; sub?: unknown };
    return value.client_id === clientId || (value.client_id === undefined && value.sub === clientId);
  } catch {
    return false;
  }
}
