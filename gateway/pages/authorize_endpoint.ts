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
import { narrowedQuery, openConsentInteraction, sealConsentInteraction } from './consent_interaction.js';
import type { AuditEvents } from '../events/audit_events.js';

export const authorizePath = '/connect/authorize';
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
 * trusted because it came back. The consent form carries more: the signed interaction of the page
 * that was shown (gateway/pages/consent_interaction.ts), so that its POST grants at most the scopes
 * displayed, to the session that met the request's sign-in requirement.
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

  // The login form carries the original query: check the form, then the request again.
  const submittedRequest = (page: PageRequest): AuthorizeRequest | undefined => {
    if (!checkedForm(page)) return undefined;
    return validated(page.exchange, page.form.request ?? '');
  };

  const checkedForm = (page: PageRequest): boolean => {
    if (secrets.checkCsrf(page, page.form.csrf_token)) return true;
    errorPage(page.exchange, 400, formExpired);
    return false;
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
        interaction: sealConsentInteraction(secrets, request, session, now()),
        clientName: clientName(request.client),
        userName,
        scopes: request.scopes.scopes.map((s) => ({ description: scopeDescriptions.get(s) ?? s })),
      }),
      { cookies },
    );
  };

  // A session counts only if it was made for what this request asks of the sign-in: not under
  // prompt=login, and not older than max_age (OIDC Core §3.1.2.1: the user MUST be authenticated
  // again).
  const usableSession = (request: AuthorizeRequest, cookies: string): Session | undefined => {
    const session = secrets.readSession(cookies);
    if (session === undefined || request.prompt.has('login')) return undefined;
    if (request.maxAge !== undefined && !signedInWithin(session, request.maxAge, now())) return undefined;
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
      if (!checkedForm(page)) return;
      // Only a consent page this service showed, to this session, after the sign-in its request
      // required, and not too long ago: a form put together by hand (the query of a prompt=login
      // request, wider scopes) names no interaction and is refused.
      const session = secrets.readSession(page.cookies);
      const interaction = openConsentInteraction(secrets, page.form.interaction, session, now());
      if (interaction === undefined || session === undefined) {
        errorPage(page.exchange, 400, formExpired);
        return;
      }
      // A `scope` member may narrow the grant to some of the scopes shown, never widen it.
      const query = narrowedQuery(interaction, page.form.scope);
      if (query === undefined) {
        errorPage(page.exchange, 400, 'The form asks for access that was not shown. Go back to the application and start again.');
        return;
      }
      // The request again: the client or its redirect URI may have been disabled since.
      const request = validated(page.exchange, query);
      if (request === undefined) return;
      const shown = new Set(interaction.scopes);
      if (!request.scopes.scopes.every((s) => shown.has(s))) {
        // The config changed under the open form (an omitted scope now resolves to more).
        errorPage(page.exchange, 400, formExpired);
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

const formExpired = 'The form has expired. Go back to the application and start again.';

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
