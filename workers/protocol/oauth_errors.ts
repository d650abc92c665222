/**
 * OAuth error codes of the token endpoint (RFC 6749 §5.2, RFC 8628 §3.5, RFC 8693 §2.2.2),
 * with the HTTP status and the fixed public description each one answers with.
 *
 * Errors cross the thread boundary as plain {@link OAuthErrorResult} objects, not thrown
 * classes: class identity and extra fields do not survive structured clone or msgpackr.
 */
export const TokenRequestErrors = {
  InvalidRequest: 'invalid_request',
  InvalidClient: 'invalid_client',
  InvalidGrant: 'invalid_grant',
  UnauthorizedClient: 'unauthorized_client',
  UnsupportedGrantType: 'unsupported_grant_type',
  InvalidScope: 'invalid_scope',
  InvalidTarget: 'invalid_target',
  AuthorizationPending: 'authorization_pending',
  SlowDown: 'slow_down',
  AccessDenied: 'access_denied',
  ExpiredToken: 'expired_token',
  TemporarilyUnavailable: 'temporarily_unavailable',
  ServerError: 'server_error',
} as const;

export type TokenRequestError = (typeof TokenRequestErrors)[keyof typeof TokenRequestErrors];

const errorStatus: Record<TokenRequestError, number> = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  unauthorized_client: 400,
  unsupported_grant_type: 400,
  invalid_scope: 400,
  invalid_target: 400,
  authorization_pending: 400,
  slow_down: 400,
  access_denied: 400,
  expired_token: 400,
  temporarily_unavailable: 503,
  server_error: 500,
};

/** The HTTP status an OAuth error answers with, unless a caller overrides it (413, 405, 429). */
export function statusOf(error: TokenRequestError): number {
  return errorStatus[error];
}

export function isTokenRequestError(value: unknown): value is TokenRequestError {
  return typeof value === 'string' && Object.hasOwn(errorStatus, value);
}

/** An OAuth error as it travels between threads and out to the client. */
export interface OAuthErrorResult {
  error: TokenRequestError;
  /** Fixed, safe sentence; never an exception message. */
  description?: string;
  /** HTTP status when it differs from {@link statusOf} (405, 413, 429). */
  status?: number;
  /** Seconds, for 429 and 503. */
  retryAfter?: number;
}

/**
 * Thrown inside one thread to stop a request with an OAuth error. `detail` is for logs only and
 * is never serialised into a response.
 */
export class OAuthError extends Error {
  readonly error: TokenRequestError;
  readonly description: string | undefined;
  readonly status: number;
  readonly retryAfter: number | undefined;
  readonly detail: string | undefined;
  /** Extra members of the error body (an extension grant's custom response). */
  readonly extra: Readonly<Record<string, unknown>> | undefined;

  constructor(
    error: TokenRequestError,
    description?: string,
    options: { status?: number; retryAfter?: number; detail?: string; extra?: Readonly<Record<string, unknown>> } = {},
  ) {
    super(description ?? error);
    this.name = 'OAuthError';
    this.error = error;
    this.description = description;
    this.status = options.status ?? statusOf(error);
    this.retryAfter = options.retryAfter;
    this.detail = options.detail;
    this.extra = options.extra;
  }

  toResult(): OAuthErrorResult {
    const result: OAuthErrorResult = { error: this.error, status: this.status };
    if (this.description !== undefined) result.description = this.description;
    if (this.retryAfter !== undefined) result.retryAfter = this.retryAfter;
    return result;
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
  return description === undefined
    ? `{"error":"${error}"}`
    : JSON.stringify({ error, error_description: description });
}
