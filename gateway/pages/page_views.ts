import type { RegisteredClient } from '../../core/client_model.js';
import type { TesseraConfig } from '../config/schema.js';
import { errorPage, type PageRequest } from './page_form.js';
import type { PageSecrets, Session } from './session.js';
import type { SignInOutcome } from './sign_in.js';
import { renderPage } from './templates.js';

/**
 * The views the authorization endpoint and the device page share: the sign-in form, the consent
 * form and what each scope is called on it. Each flow says where its forms post and what they
 * carry back (the authorize query, or the device's user code).
 */

/** What a scope is called on the consent page: its `displayName`, or its name. */
export class ScopeDescriptions {
  private readonly descriptions: Map<string, string>;

  /** `usedOn` names what the user leaves when offline access matters: the application or the device. */
  constructor(config: Pick<TesseraConfig, 'identityResources' | 'apiScopes'>, usedOn: 'application' | 'device') {
    this.descriptions = new Map([['offline_access', `Stay connected when you are not using the ${usedOn} (offline access)`]]);
    for (const r of config.identityResources) this.descriptions.set(r.name, r.displayName ?? r.name);
    for (const s of config.apiScopes) this.descriptions.set(s.name, s.displayName ?? s.name);
  }

  of(scopes: readonly string[]): { description: string }[] {
    return scopes.map((s) => ({ description: this.descriptions.get(s) ?? s }));
  }
}

/** The sign-in form: where it posts, what it carries back, and why it is shown again. */
export interface LoginView {
  readonly action: string;
  /** Carried back in the hidden `request` input. */
  readonly request: string;
  readonly client: RegisteredClient;
  readonly status?: number;
  readonly error?: string | undefined;
  readonly username?: string | undefined;
  /** RFC 6585 §4: a 429 says when to come back. */
  readonly retryAfter?: number | undefined;
}

export function showLogin(page: PageRequest, secrets: PageSecrets, view: LoginView): void {
  const csrf = secrets.csrfToken(page.cookies);
  page.exchange.sendPage(
    view.status ?? 200,
    renderPage('login', 'Sign in', {
      action: view.action,
      csrfToken: csrf.token,
      request: view.request,
      clientName: clientName(view.client),
      error: view.error,
      username: view.username,
    }),
    { ...(csrf.cookie !== undefined ? { cookies: [csrf.cookie] } : {}), retryAfter: view.retryAfter },
  );
}

/**
 * The consent form. The authorization endpoint's carries its signed interaction
 * (gateway/pages/consent_interaction.ts); the device page's carries the user code as `request`.
 */
export interface ConsentView {
  readonly action: string;
  readonly client: RegisteredClient;
  readonly session: Session;
  readonly scopes: readonly string[];
  readonly descriptions: ScopeDescriptions;
  readonly interaction?: string;
  readonly request?: string;
  /** Offers "remember my decision" (the client's `allowRememberConsent`; authorization endpoint only). */
  readonly remember?: boolean;
}

/** `cookies`: set with the page, besides the CSRF cookie (a session just started). */
export function showConsent(page: PageRequest, secrets: PageSecrets, view: ConsentView, cookies: string[] = []): void {
  const csrf = secrets.csrfToken(page.cookies, view.session);
  if (csrf.cookie !== undefined) cookies.push(csrf.cookie);
  page.exchange.sendPage(
    200,
    renderPage('consent', 'Allow access', {
      action: view.action,
      csrfToken: csrf.token,
      interaction: view.interaction,
      request: view.request,
      clientName: clientName(view.client),
      userName: view.session.displayName,
      scopes: view.descriptions.of(view.scopes),
      remember: view.remember === true,
    }),
    { cookies },
  );
}

/** Why the sign-in form is shown again: the status, the message, the name typed, when to come back. */
export type LoginRetry = Pick<LoginView, 'status' | 'error' | 'username' | 'retryAfter'>;

/** How a flow shows its two forms, for {@link showSignInOutcome}. */
export interface SignInViews {
  login(retry: LoginRetry): void;
  consent(session: Session, cookies: string[]): void;
}

/** A sign-in's outcome on the page: the consent form, the sign-in form again, or an error page. */
export function showSignInOutcome(page: PageRequest, outcome: SignInOutcome, views: SignInViews): void {
  if (outcome.kind === 'signed_in') views.consent(outcome.session, [outcome.cookie]);
  else if (outcome.kind === 'retry')
    views.login({ status: outcome.status, error: outcome.message, username: page.form.username, retryAfter: outcome.retryAfter });
  else errorPage(page.exchange, outcome.status, outcome.message);
}

export function clientName(client: RegisteredClient): string {
  return client.config.clientName ?? client.clientId;
}
