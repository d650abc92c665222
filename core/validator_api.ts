/**
 * The public API for validator authors (validators/README.md), published as the package's
 * `tessera/validator` entry (validator.ts):
 * `import { GrantValidationResult, TokenRequestErrors, type ExtensionGrantValidator } from 'tessera/validator'`.
 *
 * It mirrors IdentityServer's `IExtensionGrantValidator` in TypeScript idiom: a class with a
 * `grantType` and an async `validate(context)` that sets `context.result`.
 */
import { TokenRequestErrors, type TokenRequestError } from './oauth_errors.js';

export { TokenRequestErrors, type TokenRequestError };

/** A claim as a type/value pair, the shape `TokenValidator` returns. */
export interface Claim {
  readonly type: string;
  readonly value: string;
}

/** A JSON value a token claim may hold. */
export type ClaimValue = string | number | boolean | readonly string[] | { readonly [member: string]: unknown };

/** The request parameters as sent, including custom ones of an extension grant. */
export interface RawParameters {
  /** The parameter's value, or `null` when it is absent or empty (RFC 6749 §3.1). */
  get(name: string): string | null;
  /** Names of every parameter that was sent with a value. */
  names(): readonly string[];
}

/** The authenticated client, as a validator may see it (never its secrets). */
export interface ValidatedClient {
  readonly clientId: string;
  readonly clientName: string | undefined;
  readonly allowedScopes: readonly string[];
  readonly allowedGrantTypes: readonly string[];
  readonly claims: readonly Claim[];
  /**
   * The API resources (names) this client is, for delegation and token exchange: a subject token
   * must name one of them in `aud` (docs/configuration.md, `audiences`).
   */
  readonly audiences: readonly string[];
  /** Whether token exchange may take a client-only token (no user) as its subject token. */
  readonly allowClientTokenExchange: boolean;
  /**
   * The client's `properties` from the config (docs/configuration.md): free-form settings a
   * validator or profile service reads, IdentityServer's client `Properties`. Frozen.
   *
   * @example
   * ```ts
   * const tier = context.request.client.properties.tier ?? 'standard';
   * ```
   */
  readonly properties: Readonly<Record<string, string>>;
}

/** A token request that passed client authentication and the grant-type check. */
export interface ValidatedTokenRequest {
  readonly client: ValidatedClient;
  readonly grantType: string;
  /** The scopes the request asked for (already checked against the client), in request order. */
  readonly requestedScopes: readonly string[];
  readonly raw: RawParameters;
}

/** What a validator gets and sets. */
export interface ExtensionGrantValidationContext {
  readonly request: ValidatedTokenRequest;
  /** Starts as `invalid_grant`: a validator that sets nothing fails closed. */
  result: GrantValidationResult;
}

/** The outcome of validating an access token of this service. */
export interface TokenValidationResult {
  readonly isError: boolean;
  /** `invalid_token` and a reason, when `isError`. */
  readonly error?: string;
  /** The token's claims; arrays become one claim per element, objects their JSON text. */
  readonly claims: readonly Claim[];
}

/**
 * Validates this service's own JWT access tokens: signature against the published keys
 * (including retired ones still published), `typ: at+jwt`, `iss`, `exp`/`nbf` with a small clock
 * tolerance, and the revocation list.
 */
export interface TokenValidator {
  validateAccessToken(token: string): Promise<TokenValidationResult>;
}

/** A pino-compatible logger scoped to one validator. */
export interface ValidatorLogger {
  debug(message: string, ...args: unknown[]): void;
  debug(object: object, message?: string, ...args: unknown[]): void;
  info(message: string, ...args: unknown[]): void;
  info(object: object, message?: string, ...args: unknown[]): void;
  warn(message: string, ...args: unknown[]): void;
  warn(object: object, message?: string, ...args: unknown[]): void;
  error(message: string, ...args: unknown[]): void;
  error(object: object, message?: string, ...args: unknown[]): void;
}

/** A configured API resource (`apiResources` in the config), without its secrets. */
export interface ApiResource {
  /** The resource's name: the `aud` of tokens for it, and what `resource`/`audience` parameters name. */
  readonly name: string;
  /** The API scopes that reach this resource. */
  readonly scopes: readonly string[];
}

/** Handed to a validator's constructor, once per worker thread. */
export interface ValidatorServices {
  readonly tokenValidator: TokenValidator;
  readonly logger: ValidatorLogger;
  /** The issuer URL of this service. */
  readonly issuer: string;
  /**
   * The configured API resources, so that a validator can check a `resource` or `audience`
   * parameter (RFC 8693 §2.1, RFC 8707) and narrow the scopes to it with
   * {@link SuccessOptions.scopes}. The config file's, then the store-kept ones
   * (docs/configuration.md, `clientRegistry`): read it per request, not once at construction, as
   * store-kept resources change while the thread runs (the list is replaced, never changed).
   */
  readonly apiResources: readonly ApiResource[];
}

/**
 * An extension grant (RFC 6749 §4.5). The default export of a module in `validatorsDir` is a
 * class implementing it; Tessera constructs it once per worker with {@link ValidatorServices}.
 *
 * @example
 * ```ts
 * import { GrantValidationResult, TokenRequestErrors,
 *          type ExtensionGrantValidator, type ExtensionGrantValidationContext,
 *          type ValidatorServices } from 'tessera/validator';
 *
 * export default class DelegationGrantValidator implements ExtensionGrantValidator {
 *   readonly grantType = 'delegation';
 *   constructor(private readonly services: ValidatorServices) {}
 *
 *   async validate(context: ExtensionGrantValidationContext): Promise<void> {
 *     const token = context.request.raw.get('token');
 *     if (token === null) {
 *       context.result = GrantValidationResult.error(TokenRequestErrors.InvalidGrant);
 *       return;
 *     }
 *     const validated = await this.services.tokenValidator.validateAccessToken(token);
 *     if (validated.isError) {
 *       context.result = GrantValidationResult.error(TokenRequestErrors.InvalidGrant);
 *       return;
 *     }
 *     const sub = validated.claims.find((c) => c.type === 'sub')?.value;
 *     // Without subjectToken (or authTime) the new token records no sign-in: see SuccessOptions.authTime.
 *     context.result = GrantValidationResult.success(sub, 'delegation', { subjectToken: validated });
 *   }
 * }
 * ```
 */
export interface ExtensionGrantValidator {
  readonly grantType: string;
  validate(context: ExtensionGrantValidationContext): Promise<void>;
}

/** The shape of a validator module's default export. */
export type ExtensionGrantValidatorClass = new (services: ValidatorServices) => ExtensionGrantValidator;

/**
 * The authentication methods a validator may put in a token's `amr` (`claims.amr`): the values of
 * the IANA "Authentication Method Reference Values" registry (RFC 8176 §2). A value outside it is
 * refused (`invalid_grant`, logged), since relying parties compare `amr` to known values for
 * step-up decisions.
 *
 * @example
 * ```ts
 * import { GrantValidationResult, authenticationMethods } from 'tessera/validator';
 *
 * // A one-time code checked after a password: multi-factor (RFC 8176 §2, "mfa" with what was used).
 * authenticationMethods.has('otp'); // true
 * context.result = GrantValidationResult.success(user.id, this.grantType, {
 *   claims: { amr: ['pwd', 'otp', 'mfa'], acr: 'urn:example:loa:2' },
 * });
 * ```
 */
export const authenticationMethods: ReadonlySet<string> = Object.freeze(
  new Set([
    'face',
    'fpt',
    'geo',
    'hwk',
    'iris',
    'kba',
    'mca',
    'mfa',
    'otp',
    'pin',
    'pop',
    'pwd',
    'rba',
    'retina',
    'sc',
    'sms',
    'swk',
    'tel',
    'user',
    'vbm',
    'wia',
  ]),
);

export interface SuccessOptions {
  /**
   * Claims added to the access token. The registered JWT claims (`iss`, `sub`, `aud`, `exp`,
   * `scope`, `client_id`, …) cannot be set this way; `act` can (RFC 8693 §4.1). Two claims of the
   * user's sign-in can, for a result with a subject (step-up, OIDC Core §2): `amr`, a non-empty
   * list of {@link authenticationMethods} (a single string counts as a list of one), which replaces
   * the default (the subject token's `amr`, or the grant type); and `acr`, the authentication
   * context class reached, a non-empty string. Anything else in them fails closed as `invalid_grant`.
   *
   * @example
   * ```ts
   * GrantValidationResult.success('818727', 'urn:example:otp', { claims: { amr: ['otp'], acr: 'urn:example:loa:2', department: 'sales' } });
   * ```
   */
  claims?: Readonly<Record<string, ClaimValue>> | readonly Claim[];
  /**
   * Members added to the top level of the token response. `access_token`, `token_type`,
   * `expires_in`, `scope`, `refresh_token` and `id_token` cannot be overridden;
   * `issued_token_type` (RFC 8693 §2.2.1) is kept only when it states what Tessera issued:
   * `urn:ietf:params:oauth:token-type:access_token` or `urn:ietf:params:oauth:token-type:jwt`.
   */
  customResponse?: Readonly<Record<string, unknown>>;
  /**
   * The validated token the new token is for (what `tokenValidator.validateAccessToken` returned):
   * the new token keeps that token's sign-in, `auth_time`, `idp`, `amr` and `tenant`. A token
   * without a sign-in (no `auth_time`: a `client_credentials` token) passes none on, so the new
   * token has none either. Only a result of Tessera's own token validator counts.
   */
  subjectToken?: TokenValidationResult;
  /**
   * Narrows the token to these scopes (RFC 8693 §2.1 `scope`/`resource`/`audience`). Each must be
   * one the request was granted (`context.request.requestedScopes`); a result that widens or
   * empties the scopes fails closed as `invalid_grant`. `aud` follows the scopes.
   */
  scopes?: readonly string[];
  /**
   * The identity provider the user signed in with (the token's `idp`), for a result with a
   * subject and a sign-in (see {@link authTime}): a non-empty string. Without it: the subject
   * token's, or `local` (a password validator: also the `idp` claim of `claims` or the request's
   * `idp:` entry). An extension grant's result that names one without a sign-in is refused as a
   * validator bug (`invalid_grant`).
   */
  identityProvider?: string;
  /**
   * When the user authenticated (the token's `auth_time`, OIDC Core §2), in epoch seconds, for a
   * result with a subject: an integer, not later than now (a few seconds of clock tolerance).
   *
   * An extension grant's token is a user's only when a sign-in is stated: this, or the sign-in of
   * {@link subjectToken}. Without either, Tessera invents none: the token carries `sub` but no
   * `auth_time`, `idp` or `amr`, and follows the client-only rules (no identity scopes, no refresh
   * token), so delegation and token exchange will not take it as a user's (RFC 9068 §5). A
   * validator that authenticates the user itself must say when. A password validator's default is
   * now: its check is the sign-in.
   */
  authTime?: number;
}

// Results built by the factories below. Tessera accepts only these: an object that merely looks
// like a result (`{ isError: false, subject }`) is a mistake, and a security boundary fails closed.
// One set per thread, shared by every copy of this module the thread loads (a validator with its
// own installed copy of `tessera`, say), so that a result built by any copy of the real class counts.
const builtResultsKey = Symbol.for('tessera.grant-validation-results');
const builtResults: WeakSet<object> = ((globalThis as { [builtResultsKey]?: WeakSet<object> })[builtResultsKey] ??= new WeakSet<object>());

/** Whether `value` was built by {@link GrantValidationResult.error} or {@link GrantValidationResult.success}. */
export function isBuiltGrantValidationResult(value: unknown): value is GrantValidationResult {
  return typeof value === 'object' && value !== null && builtResults.has(value);
}

/**
 * The result of a grant validation: an OAuth error, or success for a subject.
 *
 * @example
 * ```ts
 * context.result = GrantValidationResult.error(TokenRequestErrors.InvalidGrant, 'The token has expired.');
 * context.result = GrantValidationResult.success('818727', 'delegation', { claims: { act: { client_id: 'api1' } } });
 * context.result = GrantValidationResult.success(undefined, 'my_grant'); // a client-only token
 * ```
 */
export class GrantValidationResult {
  readonly isError: boolean;
  readonly error: TokenRequestError | undefined;
  readonly errorDescription: string | undefined;
  /**
   * The user the token is for; `undefined` issues a client-only token. A subject alone is not a
   * sign-in: see {@link SuccessOptions.authTime}.
   */
  readonly subject: string | undefined;
  /** Becomes the token's `amr` (IdentityServer's authentication method). */
  readonly grantType: string | undefined;
  readonly claims: Readonly<Record<string, ClaimValue>> | readonly Claim[] | undefined;
  readonly customResponse: Readonly<Record<string, unknown>> | undefined;
  /** The scopes the token is narrowed to; `undefined` keeps every scope the request was granted. */
  readonly scopes: readonly string[] | undefined;
  /** Whose sign-in the new token keeps (see {@link SuccessOptions.subjectToken}). */
  readonly subjectToken: TokenValidationResult | undefined;
  /** The token's `idp` (see {@link SuccessOptions.identityProvider}). */
  readonly identityProvider: string | undefined;
  /** The token's `auth_time`, epoch seconds (see {@link SuccessOptions.authTime}). */
  readonly authTime: number | undefined;

  private constructor(fields: {
    isError: boolean;
    error?: TokenRequestError;
    errorDescription?: string | undefined;
    subject?: string | undefined;
    grantType?: string;
    claims?: Readonly<Record<string, ClaimValue>> | readonly Claim[] | undefined;
    customResponse?: Readonly<Record<string, unknown>> | undefined;
    scopes?: readonly string[] | undefined;
    subjectToken?: TokenValidationResult | undefined;
    identityProvider?: string | undefined;
    authTime?: number | undefined;
  }) {
    this.isError = fields.isError;
    this.error = fields.error;
    this.errorDescription = fields.errorDescription;
    this.subject = fields.subject;
    this.grantType = fields.grantType;
    this.claims = fields.claims;
    this.customResponse = fields.customResponse;
    this.scopes = fields.scopes;
    this.subjectToken = fields.subjectToken;
    this.identityProvider = fields.identityProvider;
    this.authTime = fields.authTime;
    // Frozen, so what Tessera checks is what it issues from.
    Object.freeze(this);
    builtResults.add(this);
  }

  /** Refuses the request with an OAuth error; `description` is returned as given. */
  static error(
    error: TokenRequestError = TokenRequestErrors.InvalidGrant,
    description?: string,
    customResponse?: Readonly<Record<string, unknown>>,
  ): GrantValidationResult {
    return new GrantValidationResult({ isError: true, error, errorDescription: description, customResponse });
  }

  /** Accepts the request for `subject` (or for the client alone when it is `undefined`/`null`). */
  static success(subject: string | null | undefined, grantType: string, options: SuccessOptions = {}): GrantValidationResult {
    return new GrantValidationResult({
      isError: false,
      subject: subject ?? undefined,
      grantType,
      claims: options.claims,
      customResponse: options.customResponse,
      scopes: options.scopes === undefined ? undefined : Object.freeze([...options.scopes]),
      subjectToken: options.subjectToken,
      identityProvider: options.identityProvider,
      authTime: options.authTime,
    });
  }
}

/** The password grant's request as a password validator sees it (validators/README.md). */
export interface PasswordValidationRequest extends ValidatedTokenRequest {
  /** Space-separated `acr_values`, split. */
  readonly acrValues: readonly string[];
  /** From an `idp:<name>` entry of `acr_values`. */
  readonly idp: string | undefined;
  /** From a `tenant:<name>` entry of `acr_values`. */
  readonly tenant: string | undefined;
}

export interface ResourceOwnerPasswordValidationContext {
  readonly userName: string;
  readonly password: string;
  readonly request: PasswordValidationRequest;
  /** Starts as `invalid_grant`: a validator that sets nothing fails closed. */
  result: GrantValidationResult;
}

/**
 * The password grant's credential check (RFC 6749 §4.3). The built-in one checks the configured
 * `users`; a module in `validatorsDir` whose default export implements this (marked by
 * `kind = 'resource_owner_password'`) replaces it.
 *
 * On success, return `GrantValidationResult.success(subjectId, 'pwd', { claims })`; the token gets
 * `amr: ["pwd"]`, `auth_time`, `idp` (from `identityProvider`, `claims.idp`, the request's `idp:`,
 * or `local`) and
 * `tenant` when one was given. On failure set nothing, or an error: never tell which part was
 * wrong.
 *
 * @example
 * ```ts
 * import { GrantValidationResult, type ResourceOwnerPasswordValidator,
 *          type ResourceOwnerPasswordValidationContext, type ValidatorServices } from 'tessera/validator';
 *
 * export default class LdapPasswordValidator implements ResourceOwnerPasswordValidator {
 *   readonly kind = 'resource_owner_password';
 *   constructor(private readonly services: ValidatorServices) {}
 *   async validate(context: ResourceOwnerPasswordValidationContext): Promise<void> {
 *     const subject = await checkWithDirectory(context.userName, context.password);
 *     if (subject !== null) context.result = GrantValidationResult.success(subject, 'pwd');
 *   }
 * }
 * ```
 */
export interface ResourceOwnerPasswordValidator {
  readonly kind: 'resource_owner_password';
  validate(context: ResourceOwnerPasswordValidationContext): Promise<void>;
}

export type ResourceOwnerPasswordValidatorClass = new (services: ValidatorServices) => ResourceOwnerPasswordValidator;

/** What a profile service is asked claims for (IdentityServer's `ProfileDataRequestContext.Caller`). */
export type ProfileDataCaller = 'access_token' | 'id_token' | 'userinfo';

/** What {@link ProfileService.getProfileData} gets. */
export interface ProfileDataRequestContext {
  /** The user (`sub`). */
  readonly subject: string;
  /** The client the token is (or was) issued to. */
  readonly client: ValidatedClient;
  readonly caller: ProfileDataCaller;
  /**
   * The claim types the granted identity scopes release (`id_token`, `userinfo`): only these of
   * the returned claims reach the ID token or the UserInfo answer. Empty for `access_token`: every
   * claim returned is added to the access token (decide by {@link scopes}).
   */
  readonly requestedClaimTypes: readonly string[];
  /** The scopes of the token being issued, or of the access token presented at UserInfo. */
  readonly scopes: readonly string[];
  /** The sign-in the token records: `auth_time`, `idp`, `amr`, `tenant` and a validator's claims. */
  readonly signIn: Readonly<Record<string, ClaimValue>>;
}

/** What {@link ProfileService.isActive} gets. */
export interface IsActiveContext {
  /** The user (`sub`). */
  readonly subject: string;
  readonly client: ValidatedClient;
  /** The grant type of the token request (`password`, `refresh_token`, an extension grant's…), or `userinfo`. */
  readonly caller: string;
}

/**
 * The profile service (IdentityServer's `IProfileService`): where users' claims come from, and
 * whether a user may still get tokens, so that users can live in a store of their own instead of
 * the config file. A module in `validatorsDir` whose default export implements this (marked by
 * `kind = 'profile_service'`) is consulted on every issuance for a user (password,
 * authorization_code, device_code, refresh_token, extension grants with a subject) and at the
 * UserInfo endpoint; at most one. Without one, the configured `users` answer.
 *
 * A user who is not active is refused (`invalid_grant`; `401 invalid_token` at UserInfo). Claims
 * for `id_token` and `userinfo` replace the configured users' (only the types the identity scopes
 * release are used); claims for `access_token` are added to the access token, and a registered
 * claim (`sub`, `iss`, `aud`, `exp`, `idp`, `cnf`…) among them fails the request closed, as for a
 * validator. A throw is `invalid_grant`, no answer within `validatorTimeoutMs`
 * `temporarily_unavailable`.
 *
 * @example
 * ```ts
 * import { readFileSync } from 'node:fs';
 * import type { ProfileService, ProfileDataRequestContext, IsActiveContext } from 'tessera/validator';
 *
 * export const dataFiles = ['./people.json'];
 * const people = JSON.parse(readFileSync(new URL('./people.json', import.meta.url), 'utf8'));
 *
 * export default class PeopleProfileService implements ProfileService {
 *   readonly kind = 'profile_service';
 *   async getProfileData(context: ProfileDataRequestContext) {
 *     return context.caller === 'access_token' ? { department: people[context.subject].department } : people[context.subject].claims;
 *   }
 *   async isActive(context: IsActiveContext) {
 *     return people[context.subject]?.active === true;
 *   }
 * }
 * ```
 */
export interface ProfileService {
  readonly kind: 'profile_service';
  /** The user's claims for `context.caller`: `{ name: value }` or `[{ type, value }]`. */
  getProfileData(context: ProfileDataRequestContext): Promise<Readonly<Record<string, ClaimValue>> | readonly Claim[]>;
  /** Whether the user may still get tokens and UserInfo answers. */
  isActive(context: IsActiveContext): Promise<boolean>;
}

export type ProfileServiceClass = new (services: ValidatorServices) => ProfileService;
