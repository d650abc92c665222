import type { TemplatedApp } from 'uWebSockets.js';
import type { TesseraConfig } from '../config/schema.js';
import type { RegisteredClient } from '../../workers/protocol/client_model.js';
import type { ScopeRules } from '../../workers/grants/scope_rules.js';
import type { Store } from '../../workers/store/store.js';
import { isStoreUnavailable } from '../../workers/store/store.js';
import { AuthorizationErrors, OAuthErrors } from '../../workers/protocol/oauth_errors.js';
import type { AuthorizationCodeRecord } from '../../workers/tokens/authorization_code_record.js';
import { newFamilyHandle, newFamilyId } from '../../workers/tokens/refresh_token_handle.js';
import type { Exchange } from '../http/exchange.js';
import type { WorkerDispatcher } from '../worker_dispatcher.js';
import { authorizationResponseUrl, errorMembers, validateAuthorizeRequest, type AuthorizeRequest } from './authorize_request.js';
import { createPageRoute, errorPage, type PageRequest } from './page_form.js';
import type { PageSecrets, Session } from './session.js';
import { renderPage } from './templates.js';
import { signIn } from './sign_in.js';
import type { AuditEvents } from '../events/audit_events.js';

export const authorizePath = '/connect/authorize';
/** How long a consent form may stay open after a sign-in that met the request's `max_age`. */
const consentFormSeconds = 600;
const loginPath = '/connect/authorize/login';
const consentPath = '/connect/authorize/consent';

export interface AuthorizeEndpointDeps {
  config: Pick<TesseraConfig, 'issuer' | 'identityResources' | 'apiScopes'>;
  clients: ReadonlyMap<string, RegisteredClient>;
  scopes: ScopeRules;
  secrets: PageSecrets;
  dispatcher: WorkerDispatcher;
  store: Store;
  /** Sign-ins and device decisions are audit events (docs/operations.md, "Events"). */
  events: AuditEvents;
  now?: () => number;
}

/**
 * The authorization endpoint (RFC 6749 §3.1) with its login and consent pages. Every step
 * validates the original request again: the query travels through the forms and is never
 * trusted because it came back.
 */
export function registerAuthorizeEndpoint(app: TemplatedApp, deps: AuthorizeEndpointDeps): void {
  const { config, secrets } = deps;
  const now = deps.now ?? Date.now;
  const scopeDescriptions = new Map<string, string>([
    ['offline_access', 'Stay connected when you are not using the application (offline access)'],
  ]);
  for (const r of config.identityResources) scopeDescriptions.set(r.name, r.displayName ?? r.name);
  for (const s of config.apiScopes) scopeDescriptions.set(s.name, s.displayName ?? s.name);

  const validated = (exchange: Exchange, query: string): AuthorizeRequest | undefined => {
    const outcome = validateAuthorizeRequest(query, deps.clients, deps.scopes);
    if (outcome.kind === 'ok') return outcome.request;
    if (outcome.kind === 'page') errorPage(exchange, 400, outcome.message, 'Sign-in request refused');
    else
      redirect(
        exchange,
        authorizationResponseUrl(outcome.redirectUri, config.issuer, {
          error: outcome.error,
          error_description: outcome.description,
          state: outcome.state,
        }),
      );
    return undefined;
  };

  // The login and consent forms carry the original query: check the form, then the request again.
  const submittedRequest = (page: PageRequest): AuthorizeRequest | undefined => {
    if (!secrets.checkCsrf(page, page.form.csrf_token)) {
      errorPage(page.exchange, 400, 'The form has expired. Go back to the application and start again.');
      return undefined;
    }
    return validated(page.exchange, page.form.request ?? '');
  };

  const showLogin = (
    page: PageRequest,
    request: AuthorizeRequest,
    status = 200,
    error?: string,
    username?: string,
    retryAfter?: number,
  ): void => {
    const csrf = secrets.csrfToken(page.cookies);
    page.exchange.sendPage(
      status,
      renderPage('login', 'Sign in', {
        action: loginPath,
        csrfToken: csrf.token,
        request: request.query,
        clientName: clientName(request.client),
        error,
        username,
      }),
      { ...(csrf.cookie !== undefined ? { cookies: [csrf.cookie] } : {}), retryAfter },
    );
  };

  const showConsent = (page: PageRequest, request: AuthorizeRequest, session: Session, cookies: string[] = []): void => {
    const csrf = secrets.csrfToken(page.cookies, session);
    if (csrf.cookie !== undefined) cookies.push(csrf.cookie);
    const userName = session.displayName;
    page.exchange.sendPage(
      200,
      renderPage('consent', 'Allow access', {
        action: consentPath,
        csrfToken: csrf.token,
        request: request.query,
        clientName: clientName(request.client),
        userName,
        scopes: request.scopes.scopes.map((s) => ({ description: scopeDescriptions.get(s) ?? s })),
      }),
      { cookies },
    );
  };

  // A session counts only if it was made for what this request asks of the sign-in: not under
  // prompt=login, and not older than max_age (OIDC Core §3.1.2.1: the user MUST be authenticated
  // again). `extraAgeSeconds` is the time a consent form may take once the sign-in it follows was
  // fresh enough.
  const usableSession = (request: AuthorizeRequest, cookies: string, extraAgeSeconds = 0): Session | undefined => {
    const session = secrets.readSession(cookies);
    if (session === undefined || request.prompt.has('login')) return undefined;
    if (request.maxAge !== undefined && !signedInWithin(session, request.maxAge + extraAgeSeconds, now())) return undefined;
    if ((request.acr.idp ?? 'local') !== (session.claims.idp ?? 'local')) return undefined;
    if (request.acr.tenant !== undefined && request.acr.tenant !== session.claims.tenant) return undefined;
    return session;
  };

  app.any(
    authorizePath,
    // OIDC Core §3.1.2.1: GET and POST (a form-encoded body carrying the same parameters).
    createPageRoute(['get', 'post'], (page) => {
      const query = page.method === 'post' ? new URLSearchParams(page.form).toString() : page.query;
      const request = validated(page.exchange, query);
      if (request === undefined) return;
      const session = usableSession(request, page.cookies);
      // OIDC Core §3.1.2.1: prompt=none shows no page at all. Consent is never remembered, so a
      // signed-in user still needs the consent page: consent_required.
      if (request.prompt.has('none')) {
        redirect(
          page.exchange,
          responseUrl(
            request,
            session === undefined ? errorMembers(AuthorizationErrors.loginRequired) : errorMembers(AuthorizationErrors.consentRequired),
          ),
        );
      } else if (session !== undefined) showConsent(page, request, session);
      else showLogin(page, request);
    }),
  );

  app.any(
    loginPath,
    createPageRoute(['post'], (page) => {
      const request = submittedRequest(page);
      if (request === undefined) return;
      signIn(
        deps.dispatcher,
        secrets,
        {
          clientId: request.client.clientId,
          form: page.form,
          scope: request.scopes.scope,
          acrValues: request.acr.values,
          address: page.remoteAddress,
        },
        deps.events,
      ).then(
        (outcome) => {
          if (outcome.kind === 'signed_in') showConsent(page, request, outcome.session, [outcome.cookie]);
          else if (outcome.kind === 'retry')
            showLogin(page, request, outcome.status, outcome.message, page.form.username, outcome.retryAfter);
          else errorPage(page.exchange, outcome.status, outcome.message);
        },
        () => errorPage(page.exchange, 500, OAuthErrors.serverError.description),
      );
    }),
  );

  app.any(
    consentPath,
    createPageRoute(['post'], (page) => {
      const request = submittedRequest(page);
      if (request === undefined) return;
      const session = usableSession({ ...request, prompt: new Set() }, page.cookies, consentFormSeconds);
      if (session === undefined) {
        showLogin(page, request);
        return;
      }
      const decision = page.form.decision;
      if (decision === 'deny') {
        redirect(page.exchange, responseUrl(request, errorMembers(OAuthErrors.accessDenied)));
        return;
      }
      if (decision !== 'allow') {
        errorPage(page.exchange, 400, 'Choose allow or deny.');
        return;
      }
      issueCode(request, session).then(
        (code) => redirect(page.exchange, responseUrl(request, { code })),
        // A rethrow here would be an unhandled rejection (the process ends) and an unanswered page.
        (err: unknown) =>
          isStoreUnavailable(err)
            ? errorPage(page.exchange, 503, 'The service is temporarily unavailable. Try again in a moment.')
            : errorPage(page.exchange, 500, 'The sign-in could not be completed. Try again from the application.'),
      );
    }),
  );

  function responseUrl(request: AuthorizeRequest, members: Record<string, string | undefined>): string {
    return authorizationResponseUrl(request.redirectUri, config.issuer, { ...members, state: request.state });
  }

  async function issueCode(request: AuthorizeRequest, session: Session): Promise<string> {
    const family = newFamilyId();
    const handle = newFamilyHandle('code', family);
    const record: AuthorizationCodeRecord = {
      v: 1,
      clientId: request.client.clientId,
      redirectUri: request.redirectUri,
      subject: session.sub,
      scopes: request.scopes.scopes,
      ...(request.resources !== undefined ? { resources: request.resources } : {}),
      claims: session.claims,
      nonce: request.nonce,
      sid: session.sid,
      codeChallenge: request.codeChallenge,
      family,
      createdAt: now(),
    };
    await deps.store.set(handle.key, record, request.client.config.authorizationCodeLifetime * 1000);
    return handle.handle;
  }
}

function redirect(exchange: Exchange, location: string): void {
  exchange.sendPage(302, '', { location });
}

function clientName(client: RegisteredClient): string {
  return client.config.clientName ?? client.clientId;
}

/** Whether the session's sign-in (`auth_time`, seconds) is at most `seconds` old. */
function signedInWithin(session: Session, seconds: number, nowMs: number): boolean {
  const authTime = session.claims.auth_time;
  if (typeof authTime !== 'number') return false;
  return Math.floor(nowMs / 1000) - authTime <= seconds;
}
