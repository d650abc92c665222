/**
 * The authorization request as the login form carries it back. A request from the query travels
 * as that query: the browser brought it, and may bring it again. One whose parameters came from a
 * pushed request (RFC 9126) or a verified request object (RFC 9101) travels sealed (signed with
 * the pages' form key, for as long as a consent form lives), so that the browser cannot change
 * them on the way back, nor put a request together by hand that passes for a pushed or signed one.
 */
import { frontChannel, type AuthorizeRequest, type RequestOrigin } from './authorize_request.js';
import { consentFormSeconds } from './consent_interaction.js';
import type { PageSecrets } from './session.js';

interface SealedRequest {
  readonly v: 1;
  readonly kind: 'authorization request';
  readonly query: string;
  readonly pushed: boolean;
  readonly signed: boolean;
  /** Epoch ms after which the form is refused. */
  readonly exp: number;
}

/** The login form's `request` value for `request`. */
export function carryRequest(secrets: PageSecrets, request: AuthorizeRequest, nowMs: number): string {
  const { origin } = request;
  if (!origin.pushed && !origin.signed) return request.query;
  const sealed: SealedRequest = {
    v: 1,
    kind: 'authorization request',
    query: request.query,
    pushed: origin.pushed,
    signed: origin.signed,
    exp: nowMs + consentFormSeconds * 1000,
  };
  return secrets.signFormValue(sealed);
}

/**
 * The query and origin of a login form's `request`: a sealed one that has not expired, or else
 * the text as a query from the front channel (which a client that must push or sign is refused).
 */
export function openCarriedRequest(secrets: PageSecrets, text: string, nowMs: number): { query: string; origin: RequestOrigin } {
  const value = secrets.readFormValue(text);
  if (isSealedRequest(value)) {
    // An expired seal is no query either: nothing to validate.
    if (value.exp <= nowMs) return { query: '', origin: frontChannel };
    return { query: value.query, origin: { pushed: value.pushed, signed: value.signed } };
  }
  return { query: text, origin: frontChannel };
}

function isSealedRequest(value: unknown): value is SealedRequest {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    v.v === 1 &&
    v.kind === 'authorization request' &&
    typeof v.query === 'string' &&
    typeof v.pushed === 'boolean' &&
    typeof v.signed === 'boolean' &&
    typeof v.exp === 'number'
  );
}
