/**
 * OAuth 2.0 Token Exchange (RFC 8693) for this service's own access tokens.
 *
 * A client trades a `subject_token` (an access token Tessera issued) for a new access token for
 * the same subject, narrowed by `scope`, `resource` and `audience`:
 *
 * - with an `actor_token`, the new token is a delegation: `act` names the actor (its `sub`, and
 *   its `client_id`) and nests any `act` the subject token carried (RFC 8693 §4.1), so the whole
 *   call path stays visible. The actor token must be the caller's own (issued to it: `client_id`)
 *   or name it (`aud` or `may_act`): a caller cannot name as actor any party whose token it holds;
 * - without one, it is an impersonation: no new actor is added. An `act` the subject token
 *   already carried is kept, so that exchanging a delegated token never hides who acted.
 *
 * Errors (RFC 8693 §2.2.2): a malformed request, and a subject or actor token that is invalid,
 * are `invalid_request`; a `resource` or `audience` this client cannot get a token for is
 * `invalid_target`; a valid token this client may not use (whose subject or actor token it is:
 * docs/security.md, "Delegation and token exchange") is `invalid_grant`. The response states
 * `issued_token_type` (RFC 8693 §2.2.1).
 *
 * A client-only subject token (no `auth_time`) gives a client-only token: the result passes the
 * subject token on, and Tessera carries over only the sign-in it records, which is none.
 *
 * Request:
 * `grant_type=urn:ietf:params:oauth:grant-type:token-exchange`
 * `&subject_token=<access token>&subject_token_type=urn:ietf:params:oauth:token-type:access_token`
 * `[&actor_token=<access token>&actor_token_type=…][&scope=…][&resource=…][&audience=…]`
 * `[&requested_token_type=…]`.
 */
import {
  GrantValidationResult,
  TokenRequestErrors,
  type ApiResource,
  type Claim,
  type ExtensionGrantValidationContext,
  type ExtensionGrantValidator,
  type ValidatorServices,
} from 'tessera/validator';

/** RFC 8693 §3 token type identifiers this validator accepts and issues. */
export const TokenTypes = {
  AccessToken: 'urn:ietf:params:oauth:token-type:access_token',
  Jwt: 'urn:ietf:params:oauth:token-type:jwt',
} as const;

// Tessera's access tokens are JWTs, so both identifiers describe them (RFC 8693 §3).
const acceptedTokenTypes: ReadonlySet<string> = new Set([TokenTypes.AccessToken, TokenTypes.Jwt]);

// Fixed, safe descriptions (docs/endpoints.md, "Error table"): they say which rule failed, never why a token was refused.
const descriptions = {
  missingSubjectToken: 'The subject_token parameter is missing.',
  missingSubjectTokenType: 'The subject_token_type parameter is missing.',
  unsupportedSubjectTokenType: 'The subject_token_type is not supported.',
  missingActorTokenType: 'The actor_token_type parameter is required with actor_token.',
  actorTokenTypeWithoutToken: 'The actor_token_type parameter is only allowed with actor_token.',
  unsupportedActorTokenType: 'The actor_token_type is not supported.',
  unsupportedRequestedTokenType: 'The requested_token_type is not supported.',
  invalidSubjectToken: 'The subject token is invalid.',
  invalidActorToken: 'The actor token is invalid.',
  invalidTarget: 'The client cannot obtain a token for the requested resource or audience with the requested scope.',
} as const;

export default class TokenExchangeGrantValidator implements ExtensionGrantValidator {
  readonly grantType = 'urn:ietf:params:oauth:grant-type:token-exchange';

  private resourceMap: ReadonlyMap<string, ApiResource> = new Map();
  private resourceList: readonly ApiResource[] | undefined;

  constructor(private readonly services: ValidatorServices) {}

  /**
   * The API resources by name, built again when `services.apiResources` is another list: store-kept
   * resources change while the thread runs (docs/configuration.md, `clientRegistry`).
   */
  private get resources(): ReadonlyMap<string, ApiResource> {
    const list = this.services.apiResources;
    if (list !== this.resourceList) {
      this.resourceList = list;
      this.resourceMap = new Map(list.map((r) => [r.name, r]));
    }
    return this.resourceMap;
  }

  async validate(context: ExtensionGrantValidationContext): Promise<void> {
    const raw = context.request.raw;
    const refuse = (error: (typeof TokenRequestErrors)[keyof typeof TokenRequestErrors], description: string): void => {
      context.result = GrantValidationResult.error(error, description);
    };

    // RFC 8693 §2.1: the request's own rules first; they need no store read.
    const subjectToken = raw.get('subject_token');
    if (subjectToken === null) return refuse(TokenRequestErrors.InvalidRequest, descriptions.missingSubjectToken);
    const subjectTokenType = raw.get('subject_token_type');
    if (subjectTokenType === null) return refuse(TokenRequestErrors.InvalidRequest, descriptions.missingSubjectTokenType);
    if (!acceptedTokenTypes.has(subjectTokenType))
      return refuse(TokenRequestErrors.InvalidRequest, descriptions.unsupportedSubjectTokenType);

    const actorToken = raw.get('actor_token');
    const actorTokenType = raw.get('actor_token_type');
    if (actorToken !== null && actorTokenType === null)
      return refuse(TokenRequestErrors.InvalidRequest, descriptions.missingActorTokenType);
    if (actorToken === null && actorTokenType !== null)
      return refuse(TokenRequestErrors.InvalidRequest, descriptions.actorTokenTypeWithoutToken);
    if (actorTokenType !== null && !acceptedTokenTypes.has(actorTokenType)) {
      return refuse(TokenRequestErrors.InvalidRequest, descriptions.unsupportedActorTokenType);
    }

    const requestedTokenType = raw.get('requested_token_type');
    if (requestedTokenType !== null && !acceptedTokenTypes.has(requestedTokenType)) {
      return refuse(TokenRequestErrors.InvalidRequest, descriptions.unsupportedRequestedTokenType);
    }

    // `resource` may repeat (RFC 8693 §2.1); the gateway hands its values over joined by a space.
    const resources = raw.get('resource')?.split(' ') ?? [];
    const narrowed = this.narrowToTargets(context.request.requestedScopes, [...resources, raw.get('audience')]);
    if (narrowed === null) return refuse(TokenRequestErrors.InvalidTarget, descriptions.invalidTarget);

    // RFC 8693 §2.2.2: an invalid subject or actor token is invalid_request.
    const subject = await this.services.tokenValidator.validateAccessToken(subjectToken);
    const sub = claimOf(subject.claims, 'sub');
    if (subject.isError || sub === undefined) {
      this.services.logger.debug({ reason: subject.error }, 'subject token refused');
      return refuse(TokenRequestErrors.InvalidRequest, descriptions.invalidSubjectToken);
    }
    // Whose token it is (docs/security.md): a user's, unless the client may exchange client-only
    // tokens; issued to an API this client is (Keycloak asks the same: the caller must be in the
    // subject token's audience); and, with `may_act`, naming this client (RFC 8693 §4.4).
    const client = context.request.client;
    const policyRefusal = (reason: string): void => {
      this.services.logger.info({ clientId: client.clientId, reason }, 'token exchange refused');
      context.result = GrantValidationResult.error(TokenRequestErrors.InvalidGrant);
    };
    if (claimOf(subject.claims, 'auth_time') === undefined && !client.allowClientTokenExchange) {
      return policyRefusal("subject token is not a user's token");
    }
    const audiences = subject.claims.filter((c) => c.type === 'aud').map((c) => c.value);
    if (!audiences.some((aud) => client.audiences.includes(aud))) return policyRefusal('subject token not issued to an API this client is');
    const mayAct = parseActor(claimOf(subject.claims, 'may_act'));
    if (claimOf(subject.claims, 'may_act') !== undefined && !names(mayAct, client.clientId)) {
      return policyRefusal('may_act names another party');
    }
    const priorActor = parseActor(claimOf(subject.claims, 'act'));

    let act: Record<string, unknown> | undefined = priorActor;
    if (actorToken !== null) {
      const actor = await this.services.tokenValidator.validateAccessToken(actorToken);
      const actorSub = claimOf(actor.claims, 'sub');
      if (actor.isError || actorSub === undefined) {
        this.services.logger.debug({ reason: actor.error }, 'actor token refused');
        return refuse(TokenRequestErrors.InvalidRequest, descriptions.invalidActorToken);
      }
      // Whose token the actor token is: the caller's own, or one that names the caller. Holding a
      // token (as every API holds its callers') does not make its party the caller's actor.
      const actorClientId = claimOf(actor.claims, 'client_id');
      const actorAudiences = actor.claims.filter((c) => c.type === 'aud').map((c) => c.value);
      if (
        actorClientId !== client.clientId &&
        !actorAudiences.includes(client.clientId) &&
        !names(parseActor(claimOf(actor.claims, 'may_act')), client.clientId)
      ) {
        return policyRefusal('actor token neither issued to nor naming this client');
      }
      // RFC 8693 §4.1: the outermost act is the current actor, nested ones the prior actors.
      act = { sub: actorSub };
      if (actorClientId !== undefined) act.client_id = actorClientId;
      if (priorActor !== undefined) act.act = priorActor;
    }

    context.result = GrantValidationResult.success(sub, this.grantType, {
      claims: act === undefined ? {} : { act },
      subjectToken: subject,
      customResponse: { issued_token_type: requestedTokenType ?? TokenTypes.AccessToken },
      ...(narrowed.length > 0 ? { scopes: narrowed } : {}),
    });
  }

  /**
   * RFC 8693 §2.1 / RFC 8707: every named target must be a configured API resource that one of the
   * request's scopes reaches (the request's scopes are already limited to the client's); the token
   * then carries only the scopes of the targets. `[]` when no target was named (keep the scopes),
   * `null` when a target cannot be served.
   */
  private narrowToTargets(requestedScopes: readonly string[], names: readonly (string | null)[]): string[] | null {
    const targets = [...new Set(names.filter((n): n is string => n !== null))];
    if (targets.length === 0) return [];
    const reachable = new Set<string>();
    for (const name of targets) {
      const resource = this.resources.get(name);
      const scopes = resource?.scopes.filter((s) => requestedScopes.includes(s)) ?? [];
      if (scopes.length === 0) return null;
      for (const scope of scopes) reachable.add(scope);
    }
    return requestedScopes.filter((s) => reachable.has(s));
  }
}

function claimOf(claims: readonly Claim[], type: string): string | undefined {
  return claims.find((c) => c.type === type)?.value;
}

// `act` reaches a validator as its JSON text (TokenValidator gives objects as JSON).
function parseActor(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a `may_act` value names this client (by `client_id`, or by `sub` alone). */
function names(party: Record<string, unknown> | undefined, clientId: string): boolean {
  if (party === undefined) return false;
  return party.client_id === clientId || (party.client_id === undefined && party.sub === clientId);
}
