/**
 * The consent interaction: what one consent page showed, signed into its form, so that the form's
 * POST can grant no more than the page displayed and only to the sign-in that page followed
 * (docs/security.md, "Consent is bound to the page that was shown"). The authorization request
 * itself (client_id, redirect_uri, code_challenge, nonce, state, resource) travels inside it, not
 * beside it, so none of it can be swapped on the way back.
 */
import type { AuthorizeRequest } from './authorize_request.js';
import type { PageSecrets, Session } from './session.js';

/** How long a consent form may stay open once shown. */
export const consentFormSeconds = 600;

export interface ConsentInteraction {
  readonly v: 1;
  /** The authorization request's query as received and validated when the page was shown. */
  readonly query: string;
  readonly clientId: string;
  readonly redirectUri: string;
  /** The scopes the page listed: the POST may grant these or fewer, never others. */
  readonly scopes: readonly string[];
  /**
   * The session the page was shown to, after the request's sign-in requirement (`prompt=login`,
   * `max_age`; OIDC Core §3.1.2.1) was met: its `sid` and `auth_time`. A POST from another
   * session, or from an earlier sign-in, is refused.
   */
  readonly sid: string;
  readonly authTime: number | null;
  /**
   * Whether the page offered "remember my decision" (the client's `allowRememberConsent`): a
   * `remember` member posted with a page that did not offer it is ignored.
   */
  readonly remember?: boolean;
  /** Epoch ms after which the form is refused. */
  readonly exp: number;
  /** The parameters came from a pushed request (RFC 9126) / a request object (RFC 9101); absent: neither. */
  readonly pushed?: boolean;
  readonly signed?: boolean;
}

/** The signed form value for a consent page showing `request` to `session`. */
export function sealConsentInteraction(secrets: PageSecrets, request: AuthorizeRequest, session: Session, nowMs: number): string {
  const interaction: ConsentInteraction = {
    v: 1,
    query: request.query,
    clientId: request.client.clientId,
    redirectUri: request.redirectUri,
    scopes: request.scopes.scopes,
    sid: session.sid,
    authTime: authTimeOf(session),
    remember: request.client.config.allowRememberConsent,
    exp: nowMs + consentFormSeconds * 1000,
    ...(request.origin.pushed ? { pushed: true } : {}),
    ...(request.origin.signed ? { signed: true } : {}),
  };
  return secrets.signFormValue(interaction);
}

/**
 * The interaction a consent POST names, if this service signed it, it has not expired, and the
 * browser is still in the session it was shown to; `undefined` otherwise.
 */
export function openConsentInteraction(
  secrets: PageSecrets,
  text: string | undefined,
  session: Session | undefined,
  nowMs: number,
): ConsentInteraction | undefined {
  const value = secrets.readFormValue(text);
  if (!isInteraction(value) || value.exp <= nowMs) return undefined;
  if (session === undefined || session.sid !== value.sid || authTimeOf(session) !== value.authTime) return undefined;
  return value;
}

/**
 * The query to validate again for a POST that names `scope`: the shown request with a narrower
 * `scope`; `undefined` when it names a scope the page did not show.
 */
export function narrowedQuery(interaction: ConsentInteraction, scope: string | undefined): string | undefined {
  if (scope === undefined) return interaction.query;
  const names = scope.split(' ').filter((s) => s.length > 0);
  const shown = new Set(interaction.scopes);
  if (names.length === 0 || !names.every((s) => shown.has(s))) return undefined;
  const params = new URLSearchParams(interaction.query);
  params.set('scope', names.join(' '));
  return params.toString();
}

function authTimeOf(session: Session): number | null {
  const authTime = session.claims.auth_time;
  return typeof authTime === 'number' ? authTime : null;
}

function isInteraction(value: unknown): value is ConsentInteraction {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    v.v === 1 &&
    typeof v.query === 'string' &&
    typeof v.clientId === 'string' &&
    typeof v.redirectUri === 'string' &&
    Array.isArray(v.scopes) &&
    v.scopes.every((s) => typeof s === 'string') &&
    typeof v.sid === 'string' &&
    (v.authTime === null || typeof v.authTime === 'number') &&
    (v.remember === undefined || typeof v.remember === 'boolean') &&
    typeof v.exp === 'number' &&
    (v.pushed === undefined || typeof v.pushed === 'boolean') &&
    (v.signed === undefined || typeof v.signed === 'boolean')
  );
}
