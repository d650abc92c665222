import { dpopSigningAlgorithms } from './dpop_algorithms.js';

/**
 * The OAuth errors Tessera answers with: the error codes (RFC 6749 §5.2, RFC 8628 §3.5,
 * RFC 8693 §2.2.2, RFC 8707 §2, RFC 9449 §5 and §8), and {@link OAuthErrors}, the one catalogue of every error response, each with
 * its code, HTTP status and fixed public description (docs/endpoints.md lists them per endpoint).
 *
 * A description is a fixed sentence: never input echoed back, never an exception message.
 * What a log needs to know goes in {@link OAuthError.detail}, which is never serialised.
 * Errors cross the thread boundary as ready bodies with their code beside them in the task
 * result, not as thrown classes: class identity and extra fields do not survive structured clone
 * or msgpackr.
 */
export const TokenRequestErrors = {
  InvalidRequest: 'invalid_request',
  InvalidClient: 'invalid_client',
  InvalidGrant: 'invalid_grant',
  UnauthorizedClient: 'unauthorized_client',
  UnsupportedGrantType: 'unsupported_grant_type',
  InvalidScope: 'invalid_scope',
  InvalidTarget: 'invalid_target',
  InvalidDPoPProof: 'invalid_dpop_proof',
  UseDPoPNonce: 'use_dpop_nonce',
  /** RFC 9126 §2.3: the pushed authorization request endpoint answers the authorization endpoint's codes. */
  UnsupportedResponseType: 'unsupported_response_type',
  /** RFC 9101 §6.3, OIDC Core §3.1.2.6: a request object that fails a check. */
  InvalidRequestObject: 'invalid_request_object',
  AuthorizationPending: 'authorization_pending',
  SlowDown: 'slow_down',
  AccessDenied: 'access_denied',
  ExpiredToken: 'expired_token',
  TemporarilyUnavailable: 'temporarily_unavailable',
  ServerError: 'server_error',
} as const;

export type TokenRequestError = (typeof TokenRequestErrors)[keyof typeof TokenRequestErrors];

// RFC 6749 §5.2: 400, except invalid_client (401); server_error and temporarily_unavailable
// answer with the HTTP status they name (RFC 6749 §4.1.2.1).
const errorStatus: Record<TokenRequestError, number> = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  unauthorized_client: 400,
  unsupported_grant_type: 400,
  invalid_scope: 400,
  invalid_target: 400,
  invalid_dpop_proof: 400,
  use_dpop_nonce: 400,
  unsupported_response_type: 400,
  invalid_request_object: 400,
  authorization_pending: 400,
  slow_down: 400,
  access_denied: 400,
  expired_token: 400,
  temporarily_unavailable: 503,
  server_error: 500,
};

export function isTokenRequestError(value: unknown): value is TokenRequestError {
  return typeof value === 'string' && Object.hasOwn(errorStatus, value);
}

/** One error response: code, status, public description, and the body serialised once. */
export interface OAuthErrorEntry {
  readonly error: TokenRequestError;
  readonly status: number;
  /** Fixed, safe sentence; `undefined` only where the body is the bare code. */
  readonly description: string | undefined;
  /** `{"error":…,"error_description":…}`, built when the entry is, so answering costs no JSON work. */
  readonly body: string;
}

/**
 * The status overrides the catalogue allows: a method other than POST (RFC 9110 §15.5.6), a body
 * over the limit (RFC 9110 §15.5.14), a caller throttled after failed attempts (RFC 6585 §4).
 */
type StatusOverride = 405 | 413 | 429;

function defineError<D extends string | undefined>(
  error: TokenRequestError,
  description: D,
  status?: StatusOverride,
): OAuthErrorEntry & { readonly description: D } {
  return Object.freeze({ error, status: status ?? errorStatus[error], description, body: errorBody(error, description) });
}

/**
 * Every error response of the token, introspection, revocation and device authorization
 * endpoints and of the grants behind them. Sites reference an entry by name; none writes a
 * description of its own.
 */
export const OAuthErrors = {
  // The form POST every OAuth endpoint reads (RFC 6749 §3.2, Appendix B).
  tokenPostOnly: defineError('invalid_request', 'The token endpoint accepts POST only.', 405),
  introspectionPostOnly: defineError('invalid_request', 'The introspection endpoint accepts POST only.', 405),
  revocationPostOnly: defineError('invalid_request', 'The revocation endpoint accepts POST only.', 405),
  deviceAuthorizationPostOnly: defineError('invalid_request', 'The device authorization endpoint accepts POST only.', 405),
  pushedAuthorizationPostOnly: defineError('invalid_request', 'The pushed authorization request endpoint accepts POST only.', 405),
  /** Discovery, JWKS and the health routes. */
  getOnly: defineError('invalid_request', 'Method not allowed.', 405),
  /** Dynamic client registration (RFC 7591 §3, RFC 7592 §2): its `Allow` names what the route takes. */
  registrationMethod: defineError('invalid_request', 'The registration endpoint does not take this method here.', 405),
  notFormEncoded: defineError('invalid_request', 'The request must be application/x-www-form-urlencoded.'),
  bodyTooLarge: defineError('invalid_request', 'The request body is too large.', 413),
  formNotUtf8: defineError('invalid_request', 'The request body is not valid form-urlencoded UTF-8.'),
  duplicateParameter: defineError('invalid_request', 'A parameter was sent more than once.'),
  tooManyParameters: defineError('invalid_request', 'The request has too many parameters.'),
  /**
   * Differing `Content-Length` values, `Transfer-Encoding` with `Content-Length`, or a transfer
   * coding other than `chunked`: the body's end is ambiguous (RFC 9112 §6.1, §6.3).
   */
  ambiguousFraming: defineError('invalid_request', 'The request framing is ambiguous.'),

  // Client authentication (RFC 6749 §2.3, §5.2).
  invalidClient: defineError('invalid_client', 'Client authentication failed.'),
  /**
   * A client assertion whose signature verified and whose `jti` was spent (RFC 7523 §3 item 7):
   * not a guess, so the gateway does not count it toward the failure throttle; the distinct body
   * is how it tells (docs/security.md, "Client assertions").
   */
  clientAssertionReplayed: defineError('invalid_client', 'The client assertion was already used.'),
  multipleClientAuthMethods: defineError('invalid_request', 'The request uses more than one client authentication method.'),
  /** `Authorization: Basic` that is not Base64, has no colon, or is not form-encoded (RFC 6749 §2.3.1, Appendix B). */
  malformedBasicCredentials: defineError('invalid_request', 'The Basic credentials are malformed.'),
  /** A client, API resource or user throttled after failed attempts. */
  tooManyFailedAttempts: defineError('temporarily_unavailable', 'Too many failed attempts. Retry later.', 429),
  /** A client at one address past its rate of device authorizations (RFC 8628 §3.1). */
  tooManyDeviceAuthorizations: defineError('temporarily_unavailable', 'Too many device authorization requests. Retry later.', 429),
  /**
   * A refresh-token family past its rate of rotations (`refreshTokenRotationsPerMinute`,
   * docs/configuration.md): nothing was rotated, the same token works after `Retry-After`.
   */
  tooManyRefreshRotations: defineError('temporarily_unavailable', 'Too many refreshes of this refresh token. Retry later.', 429),
  /** An introspection caller past its limit of inactive answers (RFC 7662 §4, token scanning). */
  tooManyInactiveIntrospections: defineError('temporarily_unavailable', 'Too many introspections of inactive tokens. Retry later.', 429),

  // Token endpoint (RFC 6749 §5.2).
  missingGrantType: defineError('invalid_request', 'The grant_type parameter is missing.'),
  unsupportedGrantType: defineError('unsupported_grant_type', 'The grant type is not supported.'),
  grantTypeNotAllowed: defineError('unauthorized_client', 'The client is not allowed to use this grant type.'),

  // Pushed authorization requests (RFC 9126 §2.1, §2.3).
  /** RFC 9126 §2.1: a pushed request must not itself carry `request_uri`. */
  pushedRequestUri: defineError('invalid_request', 'The request_uri parameter is not allowed in a pushed authorization request.'),
  /** RFC 9126 §2.1: `client_id` in the body must name the authenticated client. */
  pushedClientMismatch: defineError('invalid_request', 'The client_id parameter does not name the authenticated client.'),
  /** RFC 9126 §2.3: a redirect URI the client has not registered (the endpoint never redirects). */
  pushedRedirectUri: defineError('invalid_request', 'The redirect_uri is missing or not registered for this client.'),
  /** RFC 9449 §10: `dpop_jkt` beside a DPoP proof by another key. */
  pushedDPoPKeyMismatch: defineError('invalid_request', 'The dpop_jkt parameter does not match the DPoP proof key.'),
  /** RFC 9101 §6.3, RFC 9126 §3: a request object that fails a check (the log says which). */
  invalidRequestObject: defineError('invalid_request_object', 'The pushed request object failed its checks.'),

  // DPoP at the token endpoint (RFC 9449 §4.3, §5, §8).
  /** A proof that fails any check of RFC 9449 §4.3; the log says which. */
  dpopProofInvalid: defineError('invalid_dpop_proof', 'The DPoP proof is invalid.'),
  /** RFC 9449 §4.3 check 1: not more than one DPoP header. */
  dpopHeaderRepeated: defineError('invalid_dpop_proof', 'The request carries more than one DPoP header.'),
  /** A client with `requireDPoP` sent no proof (RFC 9449 §5, `dpop_bound_access_tokens`). */
  dpopProofRequired: defineError('invalid_dpop_proof', 'A DPoP proof is required for this client.'),
  /** RFC 9449 §8: the proof lacks the server's current nonce, which the DPoP-Nonce header carries. */
  dpopNonceRequired: defineError('use_dpop_nonce', 'Authorization server requires nonce in DPoP proof.'),
  /** RFC 9449 §5: a public client's refresh token is bound to the key of the proof it was issued with. */
  refreshTokenKeyMismatch: defineError('invalid_grant', 'The refresh token is bound to another DPoP key.'),

  // Certificate-bound tokens at the token endpoint (RFC 8705 §3, §4).
  /** A client with `tlsClientCertificateBoundAccessTokens` sent its token request without a certificate. */
  clientCertificateRequired: defineError('invalid_request', 'A TLS client certificate is required for this client.'),
  /**
   * FAPI 2.0 §5.3.2.1: a `fapi2` client's access tokens are sender-constrained, so its token
   * requests carry a DPoP proof (RFC 9449) or a TLS client certificate (RFC 8705).
   */
  senderConstraintRequired: defineError(
    'invalid_request',
    "This client's tokens must be sender-constrained: send a DPoP proof or a TLS client certificate.",
  ),
  /** RFC 8705 §4: a public client's refresh token is bound to the certificate it was issued with. */
  refreshTokenCertificateMismatch: defineError('invalid_grant', 'The refresh token is bound to another client certificate.'),

  // Introspection and revocation (RFC 7662 §2.1, RFC 7009 §2.1).
  missingToken: defineError('invalid_request', 'The token parameter is missing.'),
  /**
   * RFC 9449 §5 with RFC 7009 §2.2.1: a bound refresh token (a public client's) is revoked only
   * with a proof by its key, or anyone holding it could burn its family (docs/endpoints.md, "Revocation endpoint").
   */
  revocationProofRequired: defineError('invalid_dpop_proof', 'Revoking this refresh token requires a DPoP proof by its key.'),
  /**
   * RFC 8705 §4 with RFC 7009 §2.2.1: a certificate-bound refresh token (a public client's) is
   * revoked only over a connection with that certificate, as the DPoP case above takes a proof.
   */
  revocationCertificateRequired: defineError(
    'invalid_request',
    'Revoking this refresh token requires the client certificate it is bound to.',
  ),

  // Device authorization (RFC 8628 §3.1).
  deviceFlowNotAllowed: defineError('unauthorized_client', 'The client is not allowed to use the device flow.'),

  // Scope (RFC 6749 §3.3).
  scopeNotRegistered: defineError('invalid_scope', 'A requested scope is not registered.'),
  scopeNotAllowedForClient: defineError('invalid_scope', 'The client is not allowed a requested scope.'),
  scopeNotAllowedForGrantType: defineError('invalid_scope', 'A requested scope is not allowed for this grant type.'),
  offlineAccessNotAllowed: defineError('invalid_scope', 'The client is not allowed offline access.'),
  noScopeAllowed: defineError('invalid_scope', 'The client has no scope allowed for this grant type.'),
  scopeExceedsGrant: defineError('invalid_scope', 'The requested scope exceeds the scope originally granted.'),

  // Resource indicators (RFC 8707 §2): the `resource` parameter of authorization and token requests.
  resourceMalformed: defineError('invalid_target', 'The resource parameter must be an absolute URI without a fragment.'),
  /** Unknown, or not reached by any scope the request was granted: one answer, so names are not probed. */
  resourceNotAllowed: defineError(
    'invalid_target',
    'The client cannot obtain a token for the requested resource with the requested scope.',
  ),
  /** RFC 8707 §2.2: a code redemption or refresh asked for a resource its grant did not name. */
  resourceExceedsGrant: defineError('invalid_target', 'The requested resource exceeds the resources originally granted.'),

  // Authorization code grant (RFC 6749 §4.1.3).
  missingCodeOrRedirectUri: defineError('invalid_request', 'The code and redirect_uri parameters are required.'),
  invalidAuthorizationCode: defineError('invalid_grant', 'The authorization code is invalid, expired or already used.'),
  /** RFC 9449 §10.1: the code was bound with `dpop_jkt`; the token request's proof is by another key or absent. */
  codeBoundToDPoPKey: defineError('invalid_grant', 'The authorization code is bound to another DPoP key.'),

  // Refresh token grant (RFC 6749 §6).
  missingRefreshToken: defineError('invalid_request', 'The refresh_token parameter is missing.'),
  invalidRefreshToken: defineError('invalid_grant', 'The refresh token is invalid, expired or revoked.'),

  // Device code grant (RFC 8628 §3.4, §3.5).
  missingDeviceCode: defineError('invalid_request', 'The device_code parameter is missing.'),
  invalidDeviceCode: defineError('invalid_grant', 'The device code is invalid or already used.'),
  deviceCodeExpired: defineError('expired_token', 'The device code has expired.'),
  authorizationPending: defineError('authorization_pending', 'The user has not finished yet.'),
  slowDown: defineError('slow_down', 'Polling too fast: wait longer between requests.'),
  /** The user said no (the device page, the consent page). */
  accessDenied: defineError('access_denied', 'The user denied the request.'),

  // Resource owner password grant (RFC 6749 §4.3.2).
  missingCredentials: defineError('invalid_request', 'The username and password parameters are required.'),
  identityProviderNotAllowed: defineError('invalid_request', 'The requested identity provider is not allowed for this client.'),
  /** Every failed password check answers alike, whatever failed. */
  wrongPassword: defineError('invalid_grant', 'The username or password is incorrect.'),

  /** An extension grant's validator refused, threw or broke its contract: the bare code. */
  invalidGrant: defineError('invalid_grant', undefined),

  // Anything the request did not cause.
  /** The store, a validator or the worker pool cannot answer now; sites add Retry-After. */
  temporarilyUnavailable: defineError('temporarily_unavailable', 'The service is temporarily unavailable. Retry later.'),
  /** Anything unexpected: no detail ever reaches the client. */
  serverError: defineError('server_error', 'The server could not complete the request.'),
} as const satisfies Readonly<Record<string, OAuthErrorEntry>>;

export type OAuthErrorName = keyof typeof OAuthErrors;

/** Error codes of the authorization endpoint (RFC 6749 §4.1.2.1, OpenID Connect Core §3.1.2.6). */
export type AuthorizationError =
  | 'invalid_request'
  | 'unauthorized_client'
  | 'access_denied'
  | 'unsupported_response_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'login_required'
  | 'consent_required'
  | 'invalid_request_object'
  | 'invalid_request_uri';

/**
 * An error of the authorization endpoint. It travels in the query of the redirect back to the
 * client (RFC 6749 §4.1.2.1), so it has no HTTP status and no body of its own.
 */
export interface AuthorizationErrorEntry {
  readonly error: AuthorizationError;
  readonly description: string;
}

function defineAuthorizationError(error: AuthorizationError, description: string): AuthorizationErrorEntry {
  return Object.freeze({ error, description });
}

/**
 * The authorization endpoint's own errors. Those it shares with the token side (a scope refused,
 * an identity provider not allowed, the user saying no) are the {@link OAuthErrors} entries.
 */
export const AuthorizationErrors = {
  missingResponseType: defineAuthorizationError('invalid_request', 'The response_type parameter is missing.'),
  unsupportedResponseType: defineAuthorizationError('unsupported_response_type', 'Only response_type=code is supported.'),
  authorizationCodeFlowNotAllowed: defineAuthorizationError(
    'unauthorized_client',
    'The client is not allowed to use the authorization code flow.',
  ),
  unsupportedResponseMode: defineAuthorizationError('invalid_request', 'Only response_mode=query is supported.'),
  // RFC 9126 §5 (requirePushedAuthorizationRequests) and RFC 9101 §10.5 (requireSignedRequestObject).
  pushedRequestRequired: defineAuthorizationError('invalid_request', 'This client must push its authorization requests.'),
  signedRequestRequired: defineAuthorizationError('invalid_request', 'This client must send a signed request object.'),
  /** RFC 9101 §6.3: a request object together with `request_uri`. */
  requestAndRequestUri: defineAuthorizationError('invalid_request', 'The request and request_uri parameters cannot be combined.'),
  /** OIDC Core §3.1.2.6: a request object that fails a check (the log says which). */
  invalidRequestObject: defineAuthorizationError('invalid_request_object', 'The request object is invalid.'),
  /** RFC 9449 §10: `dpop_jkt` is a base64url SHA-256 thumbprint. */
  malformedDPoPJkt: defineAuthorizationError('invalid_request', 'The dpop_jkt parameter is malformed.'),
  // PKCE (RFC 7636 §4.3, §4.4.1).
  codeChallengeMethodNotS256: defineAuthorizationError('invalid_request', 'The code_challenge_method must be S256.'),
  malformedCodeChallenge: defineAuthorizationError('invalid_request', 'The code_challenge is malformed.'),
  codeChallengeMethodWithoutChallenge: defineAuthorizationError(
    'invalid_request',
    'A code_challenge_method was sent without a code_challenge.',
  ),
  pkceRequired: defineAuthorizationError('invalid_request', 'The client must send a PKCE code_challenge.'),
  // prompt (OpenID Connect Core §3.1.2.1).
  unsupportedPrompt: defineAuthorizationError('invalid_request', 'The prompt value is not supported.'),
  promptNoneCombined: defineAuthorizationError('invalid_request', 'prompt=none cannot be combined with other values.'),
  malformedMaxAge: defineAuthorizationError('invalid_request', 'The max_age parameter must be a non-negative integer.'),
  loginRequired: defineAuthorizationError('login_required', 'The user is not signed in.'),
  consentRequired: defineAuthorizationError('consent_required', 'The user has not consented to this request.'),
} as const satisfies Readonly<Record<string, AuthorizationErrorEntry>>;

const asJsonError = new Map<AuthorizationErrorEntry, OAuthErrorEntry>(
  Object.values(AuthorizationErrors).map((entry) => [
    entry,
    defineError(isTokenRequestError(entry.error) ? entry.error : 'invalid_request', entry.description),
  ]),
);

/**
 * The JSON answer of an authorization error at the pushed authorization request endpoint, which
 * validates as the authorization endpoint does but answers in the body (RFC 9126 §2.3): the same
 * code and description, status 400. Built once per entry.
 */
export function pushedAuthorizationError(entry: AuthorizationErrorEntry | OAuthErrorEntry): OAuthErrorEntry {
  if ('status' in entry) return entry;
  return asJsonError.get(entry) ?? OAuthErrors.serverError;
}

/**
 * The one kind of entry not in the catalogue: an error an extension-grant or password validator
 * chose, with the description it gave (`GrantValidationResult.error`, validator_api.ts), which the
 * validator API returns to the client as given.
 */
export function createValidatorErrorEntry(error: TokenRequestError, description: string | undefined): OAuthErrorEntry {
  return defineError(error, description);
}

/**
 * Thrown inside one thread to stop a request with a catalogue entry. `detail` is for logs only
 * and is never serialised into a response.
 */
export class OAuthError extends Error {
  readonly entry: OAuthErrorEntry;
  /** Seconds, for 429 and 503. */
  readonly retryAfter: number | undefined;
  readonly detail: string | undefined;
  /** Extra members of the error body (an extension grant's custom response). */
  readonly extra: Readonly<Record<string, unknown>> | undefined;

  constructor(entry: OAuthErrorEntry, options: { retryAfter?: number; detail?: string; extra?: Readonly<Record<string, unknown>> } = {}) {
    // An OAuth error is an answer to the client, not a fault: nothing logs its stack, and
    // capturing one (the optimized frames and the async chain behind them) was 13% of a worker's
    // CPU on device polls, 4-5 µs each (docs/decisions/0022-oauth-errors-without-stack-traces.md).
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(entry.description ?? entry.error);
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'OAuthError';
    this.entry = entry;
    this.retryAfter = options.retryAfter;
    this.detail = options.detail;
    this.extra = options.extra;
  }

  get error(): TokenRequestError {
    return this.entry.error;
  }

  get description(): string | undefined {
    return this.entry.description;
  }

  get status(): number {
    return this.entry.status;
  }

  /** The response body: the entry's own, unless an extension grant added members. */
  get body(): string {
    return this.extra === undefined ? this.entry.body : errorBody(this.entry.error, this.entry.description, this.extra);
  }
}

/**
 * The body of an error response: `{"error": …, "error_description": …}`, plus any extra members,
 * which can never replace those two.
 */
export function errorBody(error: TokenRequestError, description?: string, extra?: Readonly<Record<string, unknown>>): string {
  if (extra !== undefined) {
    const body: Record<string, unknown> = { ...extra, error };
    if (description !== undefined) body.error_description = description;
    else delete body.error_description;
    return JSON.stringify(body);
  }
  return description === undefined ? `{"error":"${error}"}` : JSON.stringify({ error, error_description: description });
}

/**
 * Errors of a protected resource that takes bearer tokens (RFC 6750 §3.1), the UserInfo endpoint
 * (OIDC Core §5.3.3): the status, the body, and the `WWW-Authenticate` challenge that goes with
 * them, all fixed.
 */
export interface BearerErrorEntry {
  /** The `error` member of the body, for the answer's log line and trace (never read back from the body). */
  readonly error: BearerError;
  readonly status: 400 | 401 | 403 | 405;
  readonly body: string;
  readonly wwwAuthenticate: string | undefined;
  /** The same challenge for a request that used the DPoP scheme (RFC 9449 §7.1). */
  readonly dpopWwwAuthenticate: string | undefined;
}

/** Error codes of a protected resource (RFC 6750 §3.1, RFC 9449 §7.1). */
export type BearerError = 'invalid_request' | 'invalid_token' | 'insufficient_scope' | 'invalid_dpop_proof';

/**
 * The `error` of any answer a worker or the gateway makes: results carry it beside their body
 * (wire/token_task.ts), so metrics, logs, traces and events never parse a body for it.
 */
export type ErrorCode = TokenRequestError | BearerError;

function defineBearerError(
  error: Exclude<BearerError, 'invalid_dpop_proof'>,
  description: string,
  status: BearerErrorEntry['status'],
  challenge: 'with the error' | 'without an error' | 'none',
  scope?: string,
): BearerErrorEntry {
  const wwwAuthenticate =
    challenge === 'none'
      ? undefined
      : challenge === 'without an error'
        ? 'Bearer'
        : `Bearer error="${error}", error_description="${description}"${scope === undefined ? '' : `, scope="${scope}"`}`;
  const dpopWwwAuthenticate =
    challenge === 'none'
      ? undefined
      : challenge === 'without an error'
        ? dpopChallenge(undefined)
        : dpopChallenge(error, description, scope);
  return Object.freeze({
    error,
    status,
    body: JSON.stringify({ error, error_description: description }),
    wwwAuthenticate,
    dpopWwwAuthenticate,
  });
}

export const BearerErrors = {
  // RFC 6750 §3.1: a request without any authentication gets a challenge with no error code.
  noToken: defineBearerError('invalid_token', 'No access token was sent.', 401, 'without an error'),
  invalidToken: defineBearerError('invalid_token', 'The access token is invalid, expired or revoked.', 401, 'with the error'),
  /** RFC 8705 §3: a certificate-bound token used over a connection without that certificate. */
  certificateMismatch: defineBearerError(
    'invalid_token',
    'The access token is bound to another TLS client certificate.',
    401,
    'with the error',
  ),
  notOpenId: defineBearerError('insufficient_scope', 'The access token does not grant the openid scope.', 403, 'with the error', 'openid'),
  // RFC 6750 §2: a client must not use more than one method to send the token.
  twoMethods: defineBearerError('invalid_request', 'The access token was sent in more than one way.', 400, 'with the error'),
  malformed: defineBearerError('invalid_request', 'The request is malformed.', 400, 'with the error'),
  methodNotAllowed: defineBearerError('invalid_request', 'The UserInfo endpoint accepts GET and POST only.', 405, 'none'),
} as const;

/**
 * Errors of a protected resource that takes DPoP-bound tokens (RFC 9449 §7.1), answered with a
 * `DPoP` challenge that names the accepted proof algorithms. A request that used the DPoP scheme
 * gets these challenges for the {@link BearerErrors} bodies too (gateway/endpoints/userinfo_endpoint.ts).
 */
export function dpopChallenge(error: string | undefined, description?: string, scope?: string): string {
  const algs = `DPoP algs="${dpopSigningAlgorithms.join(' ')}"`;
  if (error === undefined) return algs;
  return `${algs}, error="${error}", error_description="${description ?? ''}"${scope === undefined ? '' : `, scope="${scope}"`}`;
}

function defineDPoPError(error: BearerError, description: string): BearerErrorEntry {
  const challenge = dpopChallenge(error, description);
  return Object.freeze({
    error,
    status: 401,
    body: JSON.stringify({ error, error_description: description }),
    wwwAuthenticate: challenge,
    dpopWwwAuthenticate: challenge,
  });
}

export const DPoPErrors = {
  /** RFC 9449 §7.2: a DPoP-bound token sent as a bearer token (header or form) is refused. */
  boundTokenAsBearer: defineDPoPError(
    'invalid_token',
    'The access token is bound to a DPoP key: send it with the DPoP scheme and a proof.',
  ),
  /** RFC 9449 §7.1: the DPoP scheme needs a DPoP proof, one, for this request, this token and its key. */
  proofInvalid: defineDPoPError('invalid_dpop_proof', 'The DPoP proof is missing or invalid.'),
  /** The DPoP scheme with a token that is not bound to a key. */
  tokenNotBound: defineDPoPError('invalid_token', 'The access token is not bound to a DPoP key.'),
} as const;
