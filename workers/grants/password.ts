import type { Logger } from 'pino';
import { createValidatorErrorEntry, isTokenRequestError, OAuthError, OAuthErrors, TokenRequestErrors } from '../../core/oauth_errors.js';
import {
  GrantValidationResult,
  type ClaimValue,
  type ResourceOwnerPasswordValidationContext,
  type ResourceOwnerPasswordValidator,
} from '../../core/validator_api.js';
import { parseAcrValues } from '../../core/rules/acr_values.js';
import { grantClaims, isResult, signInProblem, validatedRequest } from './extension_grant.js';
import { runWithTimeout } from './user_module_calls.js';
import { type FailureThrottle, type ThrottleState, whenBlockEnds } from '../../core/throttles.js';
import type { GrantHandler, GrantRequest, GrantServices } from './grant_handler.js';
import { narrowRequestedGrant } from '../../core/rules/scope_narrowing.js';
import { userPolicy, type GrantedScopes } from '../../core/rules/scope_rules.js';
import { issueTokens } from './token_issuance.js';
import { noteLogin } from '../task_facts_recorder.js';

/**
 * The resource owner password grant (RFC 6749 §4.3). The credential check is pluggable; this
 * handler owns what must hold whatever checks them: required parameters, `acr_values`, the
 * identity-provider restriction, the brute-force throttle, and one answer for every failure.
 */
/** A user who proved who they are, as tokens and sessions need them. */
export interface AuthenticatedUser {
  readonly subject: string;
  /** `auth_time`, `idp`, `amr`, `tenant` and the validator's own claims. */
  readonly claims: Record<string, ClaimValue>;
}

/**
 * The checks every password sign-in goes through, for the password grant and the login pages
 * alike: `acr_values`, the identity-provider restriction, the brute-force throttle, the validator
 * within its time limit, and one answer for every failure.
 */
export type ResourceOwnerAuthenticator = (
  request: GrantRequest,
  services: GrantServices,
  scopes: GrantedScopes,
) => Promise<AuthenticatedUser>;

export function createResourceOwnerAuthenticator(
  validator: ResourceOwnerPasswordValidator,
  options: {
    /** Failures per username at one client. */
    throttle: FailureThrottle;
    /** Failures per client and source address: one password tried on many usernames (spraying). */
    addressThrottle: FailureThrottle;
    /** Failures per username across every client: a second client does not restart the count. */
    userThrottle: FailureThrottle;
    timeoutMs: number;
    logger: Logger;
  },
): ResourceOwnerAuthenticator {
  const { throttle, addressThrottle, userThrottle, timeoutMs, logger } = options;
  return async (request, services, scopes) => {
    const { params, client } = request;
    const userName = params.username;
    const password = params.password;
    if (userName === undefined || password === undefined) {
      throw new OAuthError(OAuthErrors.missingCredentials);
    }
    const acr = parseAcrValues(params.acr_values);
    const restrictions = client.config.identityProviderRestrictions;
    if (restrictions.length > 0 && !restrictions.includes(acr.idp ?? 'local')) {
      throw new OAuthError(OAuthErrors.identityProviderNotAllowed);
    }

    // Per username at this client, with a tight limit: guessing one user's password is stopped
    // early without locking that user out of every other application. Per client and source
    // address: one common password tried on many usernames (spraying) is stopped too. Per username
    // across all clients, with a looser limit: guessing cannot go on by switching clients. All
    // count names that match no user alike, so the answers do not tell which usernames exist.
    const gates: readonly Gate[] = [
      { throttle, subject: `${client.clientId}\u0000${userName}`, per: 'username at this client' },
      { throttle: addressThrottle, subject: `${client.clientId}\u0000${request.address ?? ''}`, per: 'client and address' },
      {
        throttle: userThrottle,
        subject: `${acr.tenant ?? ''}\u0000${acr.idp ?? 'local'}\u0000${userName}`,
        per: 'username across clients',
      },
    ];
    // Each count is taken before the password is checked, on the store's atomic increment, so a
    // parallel burst of guesses gets at most the limit evaluated. One after the other: an attempt
    // a throttle refuses never reaches the next (refused attempts are not counted twice), and
    // the throttles it passed take their count back, so each counts only checks that ran
    // (docs/security.md, "Throttles"). A stranger's refused guesses never move the per-user count.
    const blocked = await admitAttempt(gates);
    if (blocked !== undefined) {
      const [state, per] = blocked;
      noteLogin(request.facts, { username: userName, success: false, reason: 'blocked' });
      // Security events (docs/operations.md, "Logs"): one line when a block starts, never a secret.
      if (state.firstRefusal === true) {
        const who = { clientId: client.clientId, username: userName, address: request.address, per };
        logger.info({ ...who, retryAfterSeconds: state.retryAfterSeconds }, 'password attempts blocked');
        whenBlockEnds(state, () => logger.info(who, 'password block ended'));
      }
      throw tooManyAttempts(state.retryAfterSeconds);
    }

    const context: ResourceOwnerPasswordValidationContext = {
      userName,
      password,
      request: { ...validatedRequest(request, scopes.scopes, params.scope), acrValues: acr.values, idp: acr.idp, tenant: acr.tenant },
      result: GrantValidationResult.error(TokenRequestErrors.InvalidGrant, OAuthErrors.wrongPassword.description),
    };
    await runWithTimeout(validator, context, timeoutMs, logger);
    const result = context.result;
    const subject =
      isResult(result) && !result.isError && typeof result.subject === 'string' && result.subject.length > 0 ? result.subject : undefined;
    if (subject === undefined || !isResult(result)) {
      // The attempt that reaches the limit is still answered as a wrong password; the next is 429.
      // The attempt was counted before it was evaluated.
      logger.info(
        { clientId: client.clientId, username: userName, address: request.address, reason: 'wrong credentials' },
        'password sign-in failed',
      );
      noteLogin(request.facts, { username: userName, success: false, reason: 'wrong_credentials' });
      throw failureOf(result);
    }
    // A sign-in the validator described wrongly is its bug: refused whole, as an extension grant's.
    const problem = signInProblem(result, services.now());
    if (problem !== undefined) {
      logger.error({ clientId: client.clientId, reason: problem }, 'validator result refused: ' + problem);
      throw new OAuthError(OAuthErrors.invalidGrant);
    }
    // The user proved the password: their counts start again; the address's count is of failures only.
    const [userAtClient, address, user] = gates as [Gate, Gate, Gate];
    await Promise.all([
      userAtClient.throttle.recordSuccess(userAtClient.subject),
      address.throttle.refund(address.subject),
      user.throttle.recordSuccess(user.subject),
    ]);
    noteLogin(request.facts, { username: userName, success: true, subject });

    const claims = grantClaims(result.claims);
    claims.auth_time = result.authTime ?? Math.floor(services.now() / 1000);
    // The validator may name the user's identity provider; `idp` is otherwise not its to set.
    claims.idp = result.identityProvider ?? claimOf(result.claims, 'idp') ?? acr.idp ?? 'local';
    claims.amr = [result.grantType ?? 'pwd'];
    if (acr.tenant !== undefined) claims.tenant = acr.tenant;
    return { subject, claims };
  };
}

/** The resource owner password grant (RFC 6749 §4.3) over a {@link ResourceOwnerAuthenticator}. */
export function createPasswordGrant(authenticate: ResourceOwnerAuthenticator): GrantHandler {
  return {
    grantType: 'password',
    async handle(request, services) {
      // RFC 8707: this request makes the grant, so the resources it names bind its refresh token.
      const { scopes, resources } = narrowRequestedGrant(services.scopes, request.client, request.params, userPolicy);
      const user = await authenticate(request, services, scopes);
      const bound = resources === undefined ? {} : { bound: { scopes: scopes.scopes, resources } };
      return issueTokens(request, services, { scopes, subject: user.subject, claims: user.claims, ...bound });
    },
  };
}

// One answer for every failed check; a validator's own error and description pass through.
function failureOf(result: unknown): OAuthError {
  if (isResult(result) && result.isError) {
    const error = result.error !== undefined && isTokenRequestError(result.error) ? result.error : 'invalid_grant';
    if (result.errorDescription === undefined && error === 'invalid_grant') return new OAuthError(OAuthErrors.wrongPassword);
    return new OAuthError(createValidatorErrorEntry(error, result.errorDescription));
  }
  return new OAuthError(OAuthErrors.wrongPassword);
}

function claimOf(claims: GrantValidationResult['claims'], type: string): string | undefined {
  if (claims === undefined) return undefined;
  const value = Array.isArray(claims)
    ? (claims as readonly { type: string; value: string }[]).find((c) => c.type === type)?.value
    : (claims as Record<string, unknown>)[type];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/** One throttle a password attempt goes through, and what it counts the attempt under. */
interface Gate {
  readonly throttle: FailureThrottle;
  readonly subject: string;
  /** For the block's log line. */
  readonly per: string;
}

/**
 * Counts the attempt in each throttle in turn; at the first that refuses it, takes back the counts
 * of those it passed and answers that throttle's state. The refusing throttle keeps its count:
 * it is past its limit already, and its window is fixed, so that count prolongs nothing.
 */
async function admitAttempt(gates: readonly Gate[]): Promise<[Extract<ThrottleState, { blocked: true }>, string] | undefined> {
  for (let i = 0; i < gates.length; i++) {
    const gate = gates[i] as Gate;
    const state = await gate.throttle.attempt(gate.subject);
    if (!state.blocked) continue;
    await Promise.all(gates.slice(0, i).map((passed) => passed.throttle.refund(passed.subject)));
    return [state, gate.per];
  }
  return undefined;
}

function tooManyAttempts(retryAfter: number): OAuthError {
  return new OAuthError(OAuthErrors.tooManyFailedAttempts, { retryAfter });
}
