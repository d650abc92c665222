import type { RegisteredClient } from '../../core/client_model.js';
import type { FormParams } from '../../wire/token_task.js';
import { parseAcrValues, type AcrValues } from '../../core/rules/acr_values.js';
import { isValidCodeChallenge } from '../../core/rules/pkce.js';
import { userPolicy, type GrantedScopes, type ScopeRules } from '../../core/rules/scope_rules.js';
import { narrowRequestedGrant } from '../../core/rules/scope_narrowing.js';
import {
  AuthorizationErrors,
  OAuthError,
  OAuthErrors,
  type AuthorizationErrorEntry,
  type OAuthErrorEntry,
} from '../../core/oauth_errors.js';
import { parseForm } from '../http/form_parser.js';

/** A validated authorization request (RFC 6749 §4.1.1, OIDC Core §3.1.2.1, RFC 7636). */
export interface AuthorizeRequest {
  readonly client: RegisteredClient;
  readonly redirectUri: string;
  /** Narrowed to `resources` when the request names some. */
  readonly scopes: GrantedScopes;
  /** RFC 8707 §2.1: the `resource` values, which bind the grant; `undefined` when none. */
  readonly resources: readonly string[] | undefined;
  readonly state: string | undefined;
  readonly nonce: string | undefined;
  readonly codeChallenge: string | undefined;
  readonly prompt: ReadonlySet<string>;
  /** OIDC Core §3.1.2.1 `max_age`: seconds a sign-in may be old; `undefined` when not asked. */
  readonly maxAge: number | undefined;
  readonly acr: AcrValues;
  /** The query as received, carried through the login and consent forms and validated again. */
  readonly query: string;
}

export type AuthorizeOutcome =
  | { kind: 'ok'; request: AuthorizeRequest }
  /** Before the redirect URI is trusted: an error page, never a redirect (RFC 6749 §4.1.2.1). */
  | { kind: 'page'; message: string }
  | { kind: 'redirect'; redirectUri: string; error: string; description: string | undefined; state: string | undefined };

const supportedPrompts = new Set(['none', 'login', 'consent']);

export function validateAuthorizeRequest(
  query: string,
  clients: ReadonlyMap<string, RegisteredClient>,
  scopes: ScopeRules,
): AuthorizeOutcome {
  const parsed = parseForm(Buffer.from(query, 'latin1'));
  if (!parsed.ok) {
    return {
      kind: 'page',
      message: parsed.reason === 'duplicate' ? OAuthErrors.duplicateParameter.description : 'The request is malformed.',
    };
  }
  const params: FormParams = parsed.params;
  const client = params.client_id === undefined ? undefined : clients.get(params.client_id);
  if (client === undefined || !client.enabled) return { kind: 'page', message: 'The application is unknown.' };
  const redirectUri = params.redirect_uri;
  // Exact string comparison (RFC 9700 §4.1.3): no normalisation, no prefix or pattern match.
  if (redirectUri === undefined || !client.redirectUris.has(redirectUri)) {
    return { kind: 'page', message: 'The redirect URI is not registered for this application.' };
  }

  const state = params.state;
  const fail = ({ error, description }: AuthorizationErrorEntry | OAuthErrorEntry): AuthorizeOutcome => ({
    kind: 'redirect',
    redirectUri,
    error,
    description,
    state,
  });
  if (params.response_type === undefined) return fail(AuthorizationErrors.missingResponseType);
  if (params.response_type !== 'code') return fail(AuthorizationErrors.unsupportedResponseType);
  if (!client.grantTypes.has('authorization_code')) return fail(AuthorizationErrors.authorizationCodeFlowNotAllowed);
  if (params.response_mode !== undefined && params.response_mode !== 'query') return fail(AuthorizationErrors.unsupportedResponseMode);
  if (params.request_uri !== undefined) return fail(AuthorizationErrors.requestUriNotSupported);
  if (params.request !== undefined) return fail(AuthorizationErrors.requestObjectNotSupported);

  let granted: GrantedScopes;
  let resources: readonly string[] | undefined;
  try {
    ({ scopes: granted, resources } = narrowRequestedGrant(scopes, client, params, userPolicy));
  } catch (err) {
    if (err instanceof OAuthError) return fail(err.entry);
    throw err;
  }

  const challenge = params.code_challenge;
  if (challenge !== undefined) {
    // RFC 7636 §4.3: no method means plain, which Tessera does not accept.
    if (params.code_challenge_method !== 'S256') return fail(AuthorizationErrors.codeChallengeMethodNotS256);
    if (!isValidCodeChallenge(challenge)) return fail(AuthorizationErrors.malformedCodeChallenge);
  } else if (params.code_challenge_method !== undefined) {
    return fail(AuthorizationErrors.codeChallengeMethodWithoutChallenge);
  } else if (client.config.requirePkce) {
    return fail(AuthorizationErrors.pkceRequired);
  }

  const prompt = new Set((params.prompt ?? '').split(' ').filter((p) => p.length > 0));
  for (const p of prompt) if (!supportedPrompts.has(p)) return fail(AuthorizationErrors.unsupportedPrompt);
  if (prompt.has('none') && prompt.size > 1) return fail(AuthorizationErrors.promptNoneCombined);
  let maxAge: number | undefined;
  if (params.max_age !== undefined) {
    if (!/^\d{1,9}$/.test(params.max_age)) return fail(AuthorizationErrors.malformedMaxAge);
    maxAge = Number(params.max_age);
  }

  const acr = parseAcrValues(params.acr_values);
  const restrictions = client.config.identityProviderRestrictions;
  if (restrictions.length > 0 && !restrictions.includes(acr.idp ?? 'local')) {
    return fail(OAuthErrors.identityProviderNotAllowed);
  }

  return {
    kind: 'ok',
    request: {
      client,
      redirectUri,
      scopes: granted,
      resources,
      state,
      nonce: params.nonce,
      codeChallenge: challenge,
      prompt,
      maxAge,
      acr,
      query,
    },
  };
}

/** The query members of an error response (RFC 6749 §4.1.2.1). */
export function errorMembers({ error, description }: AuthorizationErrorEntry | OAuthErrorEntry): Record<string, string | undefined> {
  return { error, error_description: description };
}

/** The redirect of an authorization response, with `iss` (RFC 9207). */
export function authorizationResponseUrl(redirectUri: string, issuer: string, members: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(members)) if (value !== undefined) url.searchParams.set(name, value);
  url.searchParams.set('iss', issuer);
  return url.href;
}
