import type { Logger } from 'pino';
import { createValidatorErrorEntry, isTokenRequestError, OAuthError, OAuthErrors, TokenRequestErrors } from '../../core/oauth_errors.js';
import {
  authenticationMethods,
  GrantValidationResult,
  isBuiltGrantValidationResult,
  type Claim,
  type ClaimValue,
  type ExtensionGrantValidationContext,
  type ExtensionGrantValidator,
  type ApiResource,
  type RawParameters,
  type ValidatedTokenRequest,
  type TokenValidationResult,
} from '../../core/validator_api.js';
import type { FormParams } from '../../wire/token_task.js';
import type { WorkerConfig } from '../../core/worker_config.js';
import { protectedClaims } from '../tokens/access_token.js';
import type { GrantHandler, GrantRequest, GrantServices, TokenResponse } from './grant_handler.js';
import { clientOnlyPolicy, userPolicy } from '../../core/rules/scope_rules.js';
import { issueTokens } from './token_issuance.js';
import { checkedGrantClaims, isPlainObject, runWithTimeout, validatedClient } from './user_module_calls.js';
import { validatedTokens } from '../tokens/validated_tokens.js';
import { clockToleranceSeconds } from '../tokens/token_validator.js';

/** Members of a token response that a custom response can never replace (validators/README.md). */
const standardResponseMembers = new Set(['access_token', 'token_type', 'expires_in', 'scope', 'refresh_token', 'id_token']);

// RFC 8693 §2.2.1: `issued_token_type` states what was issued. A validator may state it (a token
// exchange must), but only truthfully: Tessera issues one JWT access token.
const truthfulIssuedTokenTypes = new Set(['urn:ietf:params:oauth:token-type:access_token', 'urn:ietf:params:oauth:token-type:jwt']);

/** The `apiResources` of {@link ValidatorServices}: names and scopes, never secrets. */
export function validatorApiResources(config: Pick<WorkerConfig, 'apiResources'>): readonly ApiResource[] {
  return Object.freeze(config.apiResources.map((r) => Object.freeze({ name: r.name, scopes: Object.freeze([...r.scopes]) })));
}

/**
 * Runs an extension-grant validator as a grant handler. The validator sees a fail-closed result,
 * may not run past `timeoutMs`, and never leaks an exception message to the client: a throw is
 * `invalid_grant`, a timeout `temporarily_unavailable`.
 */
export function extensionGrantHandler(
  validator: ExtensionGrantValidator,
  options: { timeoutMs: number; logger: Logger; source: string },
): GrantHandler {
  const { timeoutMs, logger } = options;
  return {
    grantType: validator.grantType,
    async handle(request: GrantRequest, services: GrantServices): Promise<TokenResponse> {
      // Scope first: a request the client may not make never reaches the validator.
      const requested = services.scopes.resolve(request.client, request.params.scope, userPolicy);
      const context: ExtensionGrantValidationContext = {
        request: validatedRequest(request, requested.scopes, request.params.scope),
        result: GrantValidationResult.error(TokenRequestErrors.InvalidGrant),
      };
      await runWithTimeout(validator, context, timeoutMs, logger);

      const result = context.result;
      if (!isResult(result)) {
        throw refused(validator, options, 'validator set a result not built by GrantValidationResult');
      }
      if (result.isError) {
        const error = isTokenRequestError(result.error) ? result.error : 'invalid_grant';
        const description = typeof result.errorDescription === 'string' ? result.errorDescription : undefined;
        throw new OAuthError(createValidatorErrorEntry(error, description), {
          ...(isPlainObject(result.customResponse) ? { extra: result.customResponse } : {}),
        });
      }

      // A success is checked whole before anything is issued: each of these is a validator bug
      // that would otherwise issue a token the validator did not mean (validators/README.md,
      // "When things go wrong").
      const problem = successProblem(result, services.now());
      if (problem !== undefined) throw refused(validator, options, problem);
      const signInClaims = signInClaimsOf(result);
      if (typeof signInClaims === 'string') throw refused(validator, options, signInClaims);
      const checked = checkedGrantClaims(signInClaims.others);
      if (typeof checked === 'string') throw refused(validator, options, checked);
      const claims = checked;

      const subject = result.subject;
      // Only a stated sign-in makes a user's token (docs/security.md, "Delegation and token exchange").
      const signIn = subject === undefined ? undefined : statedSignIn(result);
      if (signIn === undefined && result.identityProvider !== undefined) {
        throw refused(validator, options, 'validator gave identityProvider without a sign-in (authTime or a signed-in subjectToken)');
      }
      // `amr` and `acr` describe a sign-in: a token without one carries neither.
      if (signIn === undefined && (signInClaims.amr !== undefined || signInClaims.acr !== undefined)) {
        throw refused(validator, options, 'validator gave amr or acr without a sign-in (authTime or a signed-in subjectToken)');
      }
      // A token without a sign-in follows the client-only scope rules (no identity scopes, no refresh).
      const policy = signIn === undefined ? clientOnlyPolicy : userPolicy;
      let scopes = signIn === undefined ? services.scopes.resolve(request.client, request.params.scope, clientOnlyPolicy) : requested;
      if (result.scopes !== undefined) {
        // A validator may only narrow (RFC 8693 §2.1): anything else is a bug, and fails closed.
        const narrowed = Array.isArray(result.scopes) ? (result.scopes as unknown[]) : [];
        if (narrowed.length === 0 || !narrowed.every((s) => typeof s === 'string' && scopes.scopes.includes(s))) {
          throw refused(validator, options, 'validator narrowed to scopes the request was not granted');
        }
        scopes = services.scopes.resolve(request.client, narrowed.join(' '), policy);
      }
      if (signIn !== undefined) {
        // A token for an existing sign-in (delegation, token exchange) keeps it: who signed in,
        // where and how, and when (RFC 8693 §1.1; the new token is about the same authentication).
        // What the validator states about the sign-in comes first: it knows the authentication.
        claims.auth_time = signIn.auth_time;
        claims.idp = result.identityProvider ?? signIn.idp ?? 'local';
        claims.amr = signInClaims.amr ?? signIn.amr ?? [result.grantType ?? validator.grantType];
        if (signInClaims.acr !== undefined) claims.acr = signInClaims.acr;
        if (signIn.tenant !== undefined) claims.tenant = signIn.tenant;
      }
      const response = await issueTokens(request, services, subject === undefined ? { scopes, claims } : { scopes, subject, claims });
      if (result.customResponse !== undefined) {
        for (const [member, value] of Object.entries(result.customResponse)) {
          if (standardResponseMembers.has(member)) continue;
          if (member === 'issued_token_type' && !truthfulIssuedTokenTypes.has(value as string)) {
            logger.warn(
              { grantType: validator.grantType, source: options.source },
              'validator stated an issued_token_type that was not issued; left out',
            );
            continue;
          }
          response[member] = value;
        }
      }
      return response;
    },
  };
}

export function validatedRequest(
  request: GrantRequest,
  grantedScopes: readonly string[],
  scopeParam: string | undefined,
): ValidatedTokenRequest {
  const client = request.client;
  return {
    client: validatedClient(client),
    grantType: request.grantType,
    // The request's own order; an omitted scope means all the client may have.
    requestedScopes: scopeParam === undefined ? grantedScopes : [...new Set(scopeParam.split(' ').filter((s) => s.length > 0))],
    raw: rawParameters(request.params),
  };
}

/**
 * The sign-in a success result states: the validator's `authTime`, else the one its subject token
 * records. `undefined` when neither has one: Tessera never makes one up (a client-only subject
 * token, or a validator that named a subject without saying when it signed in), since `auth_time`
 * is what tells a user's token from a client's (RFC 9068 §5, docs/security.md).
 */
function statedSignIn(result: GrantValidationResult): (SignIn & { auth_time: number }) | undefined {
  const fromToken = result.subjectToken !== undefined && validatedTokens.has(result.subjectToken) ? signInOf(result.subjectToken) : {};
  const authTime = result.authTime ?? fromToken.auth_time;
  return authTime === undefined ? undefined : { ...fromToken, auth_time: authTime };
}

interface SignIn {
  auth_time?: number;
  idp?: string;
  amr?: string[];
  tenant?: string;
}

/**
 * The `amr` and `acr` a validator states in its claims (validators/README.md, "`GrantValidationResult`"):
 * `amr` from the RFC 8176 registry only, `acr` a non-empty string, both about a user's sign-in, so
 * not for a client-only result. The other claims are checked as any validator's.
 */
function signInClaimsOf(result: GrantValidationResult): { amr?: string[]; acr?: string; others: unknown } | string {
  const claims: unknown = result.claims;
  let amr: unknown[] | undefined;
  let acr: unknown[] | undefined;
  let others: unknown = claims;
  if (Array.isArray(claims)) {
    const rest: unknown[] = [];
    for (const claim of claims as unknown[]) {
      const type = isPlainObject(claim) ? claim.type : undefined;
      if (type === 'amr') (amr ??= []).push((claim as { value: unknown }).value);
      else if (type === 'acr') (acr ??= []).push((claim as { value: unknown }).value);
      else rest.push(claim);
    }
    others = rest;
  } else if (isPlainObject(claims) && (Object.hasOwn(claims, 'amr') || Object.hasOwn(claims, 'acr'))) {
    const { amr: amrValue, acr: acrValue, ...rest } = claims;
    if (Object.hasOwn(claims, 'amr')) amr = Array.isArray(amrValue) ? amrValue : [amrValue];
    if (Object.hasOwn(claims, 'acr')) acr = [acrValue];
    others = rest;
  }
  if (amr === undefined && acr === undefined) return { others };
  if (result.subject === undefined) return 'validator gave amr or acr for a client-only result';
  const out: { amr?: string[]; acr?: string; others: unknown } = { others };
  if (amr !== undefined) {
    if (amr.length === 0 || !amr.every((method) => typeof method === 'string' && authenticationMethods.has(method))) {
      return 'validator gave an amr that is not a non-empty list of RFC 8176 authentication methods';
    }
    out.amr = [...new Set(amr as string[])];
  }
  if (acr !== undefined) {
    if (acr.length !== 1 || typeof acr[0] !== 'string' || acr[0].length === 0)
      return 'validator gave an acr that is not one non-empty string';
    out.acr = acr[0];
  }
  return out;
}

/** The sign-in a validated access token records. */
function signInOf(token: TokenValidationResult): SignIn {
  const values = (type: string) => token.claims.filter((c) => c.type === type).map((c) => c.value);
  const authTime = Number(values('auth_time')[0]);
  const amr = values('amr');
  const out: SignIn = {};
  if (Number.isInteger(authTime) && authTime > 0) out.auth_time = authTime;
  const idp = values('idp')[0];
  if (idp !== undefined) out.idp = idp;
  if (amr.length > 0) out.amr = amr;
  const tenant = values('tenant')[0];
  if (tenant !== undefined) out.tenant = tenant;
  return out;
}

function rawParameters(params: FormParams): RawParameters {
  return {
    get: (name) => (Object.hasOwn(params, name) ? (params[name] as string) : null),
    names: () => Object.keys(params),
  };
}

// Claims of a validator: registered JWT claims are the service's to set, except `act`, which
// delegation exists to add (RFC 8693 §4.1).
export function grantClaims(claims: GrantValidationResult['claims']): Record<string, ClaimValue> {
  const out: Record<string, ClaimValue> = {};
  if (claims === undefined) return out;
  const add = (type: string, value: ClaimValue) => {
    if (type !== 'act' && protectedClaims.has(type)) return;
    const existing = out[type];
    if (existing === undefined) out[type] = value;
    else out[type] = [...(Array.isArray(existing) ? existing : [existing]), value] as ClaimValue;
  };
  if (Array.isArray(claims)) for (const { type, value } of claims as readonly Claim[]) add(type, value);
  else for (const [type, value] of Object.entries(claims as Record<string, ClaimValue>)) add(type, value);
  return out;
}

/** Only a result built by `GrantValidationResult.error`/`.success` counts; anything else fails closed. */
export function isResult(value: unknown): value is GrantValidationResult {
  return isBuiltGrantValidationResult(value);
}

/**
 * A refusal of a validator's result as `invalid_grant`, logged once with the reason and the
 * validator's module, so that an operator can find the bug; the client learns nothing more.
 */
function refused(validator: ExtensionGrantValidator, options: { logger: Logger; source: string }, reason: string): OAuthError {
  options.logger.error({ grantType: validator.grantType, source: options.source, reason }, 'validator result refused: ' + reason);
  return new OAuthError(OAuthErrors.invalidGrant);
}

/** Why a success result cannot be issued from, or `undefined` when it can. */
function successProblem(result: GrantValidationResult, now: number): string | undefined {
  // `undefined` (or `null`, which `success` maps to it) is documented as a client-only token;
  // anything else that is not a non-empty string (a number, an object, '') is a bug.
  if (result.subject !== undefined && (typeof result.subject !== 'string' || result.subject.length === 0)) {
    return 'validator gave a subject that is not a non-empty string';
  }
  if (result.grantType !== undefined && (typeof result.grantType !== 'string' || result.grantType.length === 0)) {
    return 'validator gave a grantType that is not a non-empty string';
  }
  if (result.customResponse !== undefined && !isPlainObject(result.customResponse)) {
    return 'validator gave a customResponse that is not an object';
  }
  return signInProblem(result, now);
}

/**
 * Why a result's `identityProvider`/`authTime` cannot be issued, or
 * `undefined`. Both describe a user's sign-in: a client-only result has none. An `auth_time` in
 * the future (beyond the clock tolerance) would make a token claim an authentication that has not
 * happened (OIDC Core §2).
 */
export function signInProblem(
  result: Pick<GrantValidationResult, 'subject' | 'identityProvider' | 'authTime'>,
  nowMs: number,
): string | undefined {
  const { identityProvider, authTime } = result;
  if (identityProvider !== undefined && (typeof identityProvider !== 'string' || identityProvider.length === 0)) {
    return 'validator gave an identityProvider that is not a non-empty string';
  }
  if (authTime !== undefined) {
    if (typeof authTime !== 'number' || !Number.isSafeInteger(authTime) || authTime <= 0) {
      return 'validator gave an authTime that is not a positive integer (epoch seconds)';
    }
    if (authTime > nowMs / 1000 + clockToleranceSeconds) return 'validator gave an authTime in the future';
  }
  if (result.subject === undefined && (identityProvider !== undefined || authTime !== undefined)) {
    return 'validator gave identityProvider or authTime for a client-only result';
  }
  return undefined;
}
