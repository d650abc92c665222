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
  /**
   * RFC 9449 §10: the thumbprint of the DPoP key the code is bound to, from `dpop_jkt` (or the
   * proof at the pushed authorization request endpoint); `undefined` when unbound.
   */
  readonly dpopJkt: string | undefined;
  /**
   * The parameters as validated: the query as received, or those of the pushed request or the
   * request object. Carried through the login and consent forms and validated again.
   */
  readonly query: string;
  /** Where the parameters came from: pushed (RFC 9126) or signed (RFC 9101) ones travel sealed. */
  readonly origin: RequestOrigin;
}

/**
 * Where an authorization request's parameters came from. A pushed request's were stored by the
 * pushed authorization request endpoint after the client authenticated (RFC 9126 §4); a signed
 * one's are the claims of a request object verified with the client's keys (RFC 9101 §6).
 */
export interface RequestOrigin {
  readonly pushed: boolean;
  readonly signed: boolean;
}

/** The parameters of the query itself, as the browser brought them. */
export const frontChannel: RequestOrigin = Object.freeze({ pushed: false, signed: false });

/** What validating a request needs besides the request and its client, built once at start. */
export interface AuthorizeRules {
  readonly scopes: ScopeRules;
  /** `pushedAuthorizationRequests.required`: every client must push (RFC 9126 §5). */
  readonly requirePushed: boolean;
}

export type AuthorizeOutcome =
  | { kind: 'ok'; request: AuthorizeRequest }
  /** Before the redirect URI is trusted: an error page, never a redirect (RFC 6749 §4.1.2.1). */
  | { kind: 'page'; message: string }
  | {
      kind: 'redirect';
      redirectUri: string;
      /** The catalogue entry (the pushed authorization request endpoint answers it as JSON). */
      entry: AuthorizationErrorEntry | OAuthErrorEntry;
      error: string;
      description: string | undefined;
      state: string | undefined;
    };

const supportedPrompts = new Set(['none', 'login', 'consent']);
/** RFC 9449 §10: `dpop_jkt` is the base64url SHA-256 JWK thumbprint (RFC 7638) of the key. */
const jwkThumbprint = /^[A-Za-z0-9_-]{43}$/;

/** The message of the error page for a `request_uri` that names no live pushed request. */
export const invalidRequestUriMessage = 'The request_uri is invalid, expired or already used.';

/** Parses a query (or a form body) as the authorization endpoint reads it: an error page message, or the parameters. */
export function parseAuthorizeQuery(query: string): { ok: true; params: FormParams } | { ok: false; message: string } {
  const parsed = parseForm(Buffer.from(query, 'latin1'));
  if (parsed.ok) return parsed;
  return { ok: false, message: parsed.reason === 'duplicate' ? OAuthErrors.duplicateParameter.description : 'The request is malformed.' };
}

/**
 * The checks of an authorization request on parsed parameters: the authorization endpoint's and,
 * on a pushed request, the pushed authorization request endpoint's (RFC 9126 §2.1: "the same
 * validation as the authorization endpoint"). `request` and `request_uri` must be resolved
 * before: here they are refused. `client` is the one `client_id` names, found by the caller (the
 * config file's or the store's, docs/architecture.md "Clients in the store"); `undefined` when
 * there is none.
 */
export function validateAuthorizeParams(
  params: FormParams,
  query: string,
  client: RegisteredClient | undefined,
  rules: AuthorizeRules,
  origin: RequestOrigin,
): AuthorizeOutcome {
  const { scopes } = rules;
  if (client === undefined || !client.enabled) return { kind: 'page', message: 'The application is unknown.' };
  const redirectUri = params.redirect_uri;
  // Exact string comparison (RFC 9700 §4.1.3): no normalisation, no prefix or pattern match.
  if (redirectUri === undefined || !client.redirectUris.has(redirectUri)) {
    return { kind: 'page', message: 'The redirect URI is not registered for this application.' };
  }

  const state = params.state;
  const fail = (entry: AuthorizationErrorEntry | OAuthErrorEntry): AuthorizeOutcome => ({
    kind: 'redirect',
    redirectUri,
    entry,
    error: entry.error,
    description: entry.description,
    state,
  });
  if (params.response_type === undefined) return fail(AuthorizationErrors.missingResponseType);
  if (params.response_type !== 'code') return fail(AuthorizationErrors.unsupportedResponseType);
  if (!client.grantTypes.has('authorization_code')) return fail(AuthorizationErrors.authorizationCodeFlowNotAllowed);
  if (params.response_mode !== undefined && params.response_mode !== 'query') return fail(AuthorizationErrors.unsupportedResponseMode);
  // Resolved before this check (authorize_endpoint.ts); left in resolved parameters, or in a
  // query carried back through a form, they name nothing to use: RFC 9101 §4 forbids both inside
  // a request object, RFC 9126 §2.1 `request_uri` in a pushed request.
  if (params.request_uri !== undefined) return { kind: 'page', message: invalidRequestUriMessage };
  if (params.request !== undefined) return fail(AuthorizationErrors.invalidRequestObject);
  // RFC 9126 §5, per client or for all; RFC 9101 §10.5 (a client that must sign its requests).
  if (!origin.pushed && (rules.requirePushed || client.config.requirePushedAuthorizationRequests)) {
    return fail(AuthorizationErrors.pushedRequestRequired);
  }
  if (!origin.signed && client.config.requireSignedRequestObject) return fail(AuthorizationErrors.signedRequestRequired);
  const dpopJkt = params.dpop_jkt;
  if (dpopJkt !== undefined && !jwkThumbprint.test(dpopJkt)) return fail(AuthorizationErrors.malformedDPoPJkt);

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
      dpopJkt,
      query,
      origin,
    },
  };
}

/**
 * Form parameters as a query: a repeated `resource` (kept space-joined by the form parser) as
 * repeated members again, so that the query parses back to the same parameters.
 */
export function formParamsToQuery(params: FormParams, leaveOut: ReadonlySet<string> = new Set()): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (leaveOut.has(name)) continue;
    if (name === 'resource') for (const one of value.split(' ')) query.append(name, one.replaceAll('\t', ' '));
    else query.append(name, value);
  }
  return query.toString();
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
