/**
 * The delegation extension grant: a middle-tier API trades the user's access token for a token to
 * call a back-end API. The new token keeps the user's `sub`, carries only the requested scope, and
 * names the calling client in `act` (RFC 8693 §4.1), nested when the incoming token already had
 * an actor, so the whole call path stays visible.
 *
 * Request: `grant_type=delegation&token=<user access token>&scope=api2`.
 */
import {
  GrantValidationResult,
  TokenRequestErrors,
  type ExtensionGrantValidationContext,
  type ExtensionGrantValidator,
  type ValidatorServices,
} from 'tessera/validator';

export default class DelegationGrantValidator implements ExtensionGrantValidator {
  readonly grantType = 'delegation';

  constructor(private readonly services: ValidatorServices) {}

  async validate(context: ExtensionGrantValidationContext): Promise<void> {
    const userToken = context.request.raw.get('token');
    if (userToken === null) {
      context.result = GrantValidationResult.error(TokenRequestErrors.InvalidGrant);
      return;
    }

    const validated = await this.services.tokenValidator.validateAccessToken(userToken);
    if (validated.isError) {
      context.result = GrantValidationResult.error(TokenRequestErrors.InvalidGrant);
      return;
    }

    const sub = validated.claims.find((c) => c.type === 'sub')?.value;
    if (sub === undefined) {
      context.result = GrantValidationResult.error(TokenRequestErrors.InvalidGrant);
      return;
    }

    const act: Record<string, unknown> = { client_id: context.request.client.clientId };
    const priorActor = validated.claims.find((c) => c.type === 'act')?.value;
    if (priorActor !== undefined) act.act = JSON.parse(priorActor) as unknown;

    context.result = GrantValidationResult.success(sub, this.grantType, { claims: { act } });
  }
}
