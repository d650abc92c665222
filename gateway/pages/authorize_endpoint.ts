import type { TemplatedApp } from 'uWebSockets.js';
import type { TesseraConfig } from '../config/schema.js';
import type { ScopeRules } from '../../core/rules/scope_rules.js';
import type { Store } from '../../core/store/store.js';
import { isStoreUnavailable } from '../../core/store/store.js';
import { AuthorizationErrors, OAuthErrors } from '../../core/oauth_errors.js';
import type { AuthorizationCodeRecord } from '../../core/records/authorization_code_record.js';
import { newFamilyHandle, newFamilyId } from '../../core/records/refresh_token_handle.js';
import type { Exchange } from '../http/exchange.js';
import type { WorkerDispatcher } from '../dispatch/worker_dispatcher.js';
import {
  authorizationResponseUrl,
  errorMembers,
  frontChannel,
  formParamsToQuery,
  invalidRequestUriMessage,
  parseAuthorizeQuery,
  validateAuthorizeParams,
  type AuthorizeRequest,
  type AuthorizeRules,
  type RequestOrigin,
} from './authorize_request.js';
import { carryRequest, openCarriedRequest } from './carried_request.js';
import { prepareRequestObject } from './request_object.js';
import type { ClientKeys } from '../client_authentication/client_keys.js';
import type { ClientFinder } from '../client_registry/client_directory.js';
import type { Logger } from 'pino';
import { requestUriKey, type PushedRequestRecord } from '../../core/records/pushed_request_record.js';
import type { FormParams } from '../../wire/token_task.js';
import { createPageRoute, errorPage, type PageRequest } from './page_form.js';
import type { PageSecrets, Session } from './session.js';
import { ScopeDescriptions, showConsent, showLogin, showSignInOutcome, type LoginRetry } from './page_views.js';
import { signIn } from './sign_in.js';
import { narrowedQuery, openConsentInteraction, sealConsentInteraction, type ConsentInteraction } from './consent_interaction.js';
import type { AuditEvents } from '../observability/events/audit_events.js';
import { consentCovers, findConsent, recordGrantFamily, rememberDecision } from './user_grants.js';
import { endpointPaths } from '../endpoints/endpoint_paths.js';

export const authorizePath = endpointPaths.authorize;
const loginPath = endpointPaths.authorizeLogin;
const consentPath = endpointPaths.authorizeConsent;

export interface AuthorizeEndpointDeps {
  config: Pick<TesseraConfig, 'issuer' | 'identityResources' | 'apiScopes' | 'pushedAuthorizationRequests'>;
  /** The config file's clients, then the store's (a store lookup may fail: a 503 page). */
  clients: ClientFinder;
  scopes: ScopeRules;
  secrets: PageSecrets;
  dispatcher: WorkerDispatcher;
  store: Store;
  /** Sign-ins and consent decisions are audit events (docs/operations.md, "Events"). */
  events: AuditEvents;
  /** The keys request objects are verified with (RFC 9101 §6.2): those of `private_key_jwt`. */
  clientKeys?: ClientKeys | undefined;
  /** Why a request object was refused (never on the page). */
  logger?: Logger | undefined;
  now?: () => number;
}

/** What every step of the authorize flow reads. */
interface AuthorizeFlow {
  readonly deps: AuthorizeEndpointDeps;
  readonly rules: AuthorizeRules;
  readonly now: () => number;
  readonly descriptions: ScopeDescriptions;
}

/**
 * The authorization endpoint (RFC 6749 §3.1) with its login and consent pages. Every step
 * validates the original request again: the query travels through the forms and is never
 * trusted because it came back. The consent form carries more: the signed interaction of the page
 * that was shown (gateway/pages/consent_interaction.ts), so that its POST grants at most the scopes
 * displayed, to the session that met the request's sign-in requirement. A consent the user asked
 * to remember (gateway/pages/user_grants.ts) skips the page while it covers the request.
 */
export function registerAuthorizeEndpoint(app: TemplatedApp, deps: AuthorizeEndpointDeps): void {
  const flow: AuthorizeFlow = {
    deps,
    rules: { scopes: deps.scopes, requirePushed: deps.config.pushedAuthorizationRequests.required },
    now: deps.now ?? Date.now,
    descriptions: new ScopeDescriptions(deps.config, 'application'),
  };
  // OIDC Core §3.1.2.1: GET and POST (a form-encoded body carrying the same parameters).
  app.any(
    authorizePath,
    createPageRoute(['get', 'post'], (page) => authorize(flow, page)),
  );
  app.any(
    loginPath,
    createPageRoute(['post'], (page) => submitLogin(flow, page)),
  );
  app.any(
    consentPath,
    createPageRoute(['post'], (page) => submitConsent(flow, page)),
  );
}

/** The request itself: its parameters resolved, then {@link answerRequest}. */
function authorize(flow: AuthorizeFlow, page: PageRequest): void {
  const query = page.method === 'post' ? new URLSearchParams(page.form).toString() : page.query;
  const parsed = parseAuthorizeQuery(query);
  const params = parsed.ok ? parsed.params : undefined;
  if (params?.request_uri !== undefined) {
    // RFC 9101 §5: request and request_uri are not sent together.
    if (params.request !== undefined)
      errorPage(page.exchange, 400, AuthorizationErrors.requestAndRequestUri.description, 'Sign-in request refused');
    else void answerPushedRequest(flow, page, params);
  } else if (params?.request !== undefined) guarded(page, () => answerSignedRequest(flow, page, params));
  else answerRequest(flow, page, query, frontChannel);
}

/**
 * RFC 9101 §6: a request object by value. Its signature is verified with the client's keys in a
 * worker (never on this thread) and its `jti` spent; then only its parameters count (§6.3). A
 * request object that fails gets an error page: the redirect URI inside it is not trusted, the
 * one outside it is not used. Rejects only when the store cannot tell whether the client exists.
 */
async function answerSignedRequest(flow: AuthorizeFlow, page: PageRequest, params: FormParams): Promise<void> {
  const { deps } = flow;
  const client = params.client_id === undefined ? undefined : await deps.clients.find(params.client_id);
  if (client === undefined || !client.enabled) {
    errorPage(page.exchange, 400, 'The application is unknown.', 'Sign-in request refused');
    return;
  }
  const prepared = await prepareRequestObject(params.request ?? '', client, params, {
    issuer: deps.config.issuer,
    clientKeys: deps.clientKeys,
    now: flow.now,
  });
  if (!prepared.ok) {
    deps.logger?.info({ clientId: client.clientId, detail: prepared.reason }, 'authorization request refused');
    errorPage(page.exchange, 400, AuthorizationErrors.invalidRequestObject.description, 'Sign-in request refused');
    return;
  }
  const result = await deps.dispatcher.call({
    kind: 'authorization_request',
    clientId: client.clientId,
    params: {},
    requestObject: prepared.check,
    ...(client.stored === undefined ? {} : { client: client.stored }),
  });
  if (result[0] !== 200) {
    if (result[0] === 503) errorPage(page.exchange, 503, 'The service is temporarily unavailable. Try again in a moment.');
    else if (result[0] >= 500) errorPage(page.exchange, 500, OAuthErrors.serverError.description);
    else errorPage(page.exchange, 400, AuthorizationErrors.invalidRequestObject.description, 'Sign-in request refused');
    return;
  }
  answerRequest(flow, page, formParamsToQuery(prepared.params), { pushed: false, signed: true });
}

/**
 * RFC 9126 §4: a `request_uri` from the pushed authorization request endpoint stands for the
 * request's parameters; the query's others are ignored, but `client_id`, which must name the
 * client that pushed it. Consumed once (the store's atomic consume), so a second use, like an
 * expired or unknown one, or another client's, gets an error page: its redirect URI is not known
 * to be the client's. The record is read and its client compared before it is consumed, so that
 * another client's attempt (a guessed or leaked `request_uri`) cannot spend the right client's;
 * the consume alone decides which of concurrent uses wins. Never rejects.
 */
async function answerPushedRequest(flow: AuthorizeFlow, page: PageRequest, params: FormParams): Promise<void> {
  const key = requestUriKey(params.request_uri ?? '');
  const refuse = (): void => errorPage(page.exchange, 400, invalidRequestUriMessage, 'Sign-in request refused');
  if (key === undefined || params.client_id === undefined) return refuse();
  let record: PushedRequestRecord | undefined;
  try {
    const pushed = await flow.deps.store.get<PushedRequestRecord>(key);
    if (pushed === null || pushed.clientId !== params.client_id) return refuse();
    const found = await flow.deps.store.consume<PushedRequestRecord>(key);
    record = found.status === 'consumed' ? found.value : undefined;
  } catch (err) {
    if (isStoreUnavailable(err)) errorPage(page.exchange, 503, 'The service is temporarily unavailable. Try again in a moment.');
    else errorPage(page.exchange, 500, OAuthErrors.serverError.description);
    return;
  }
  if (record === undefined || record.clientId !== params.client_id) return refuse();
  answerRequest(flow, page, record.query, { pushed: true, signed: record.signed });
}

/** The sign-in form, the consent form, or (prompt=none) an answer at once. */
function answerRequest(flow: AuthorizeFlow, page: PageRequest, query: string, origin: RequestOrigin): void {
  guarded(page, async () => {
    const request = await validated(flow, page.exchange, query, origin);
    if (request === undefined) return;
    const session = usableSession(flow, request, page.cookies);
    if (session !== undefined) continueSignedIn(flow, page, request, session);
    // OIDC Core §3.1.2.1: prompt=none shows no page at all.
    else if (request.prompt.has('none'))
      redirect(page.exchange, responseUrl(flow, request, errorMembers(AuthorizationErrors.loginRequired)));
    else showLoginFor(flow, page, request);
  });
}

/**
 * A signed-in user's request: a code at once when a remembered consent covers it and the request
 * does not ask for consent again (`prompt=consent`); otherwise the consent page, or for
 * `prompt=none`, which shows no page, `consent_required` (OIDC Core §3.1.2.1). `cookies`: a
 * session the sign-in just started.
 */
function continueSignedIn(
  flow: AuthorizeFlow,
  page: PageRequest,
  request: AuthorizeRequest,
  session: Session,
  cookies: string[] = [],
): void {
  guarded(page, async () => {
    const consent = request.prompt.has('consent') ? undefined : await findConsent(flow.deps.store, session.sub, request.client);
    if (consent !== undefined && consentCovers(consent, request.scopes.scopes, request.resources)) {
      const code = await issueCode(flow, request, session);
      redirect(page.exchange, responseUrl(flow, request, { code }), cookies);
    } else if (request.prompt.has('none')) {
      redirect(page.exchange, responseUrl(flow, request, errorMembers(AuthorizationErrors.consentRequired)), cookies);
    } else showConsentFor(flow, page, request, session, cookies);
  });
}

/** The login form: check the form, the request again, then the credentials (in a worker). */
function submitLogin(flow: AuthorizeFlow, page: PageRequest): void {
  guarded(page, async () => {
    const request = await submittedRequest(flow, page);
    if (request !== undefined) signInFor(flow, page, request);
  });
}

function signInFor(flow: AuthorizeFlow, page: PageRequest, request: AuthorizeRequest): void {
  const { deps } = flow;
  signIn(
    deps.dispatcher,
    deps.secrets,
    {
      client: request.client,
      form: page.form,
      scope: request.scopes.scope,
      acrValues: request.acr.values,
      address: page.remoteAddress,
    },
    deps.events,
  ).then(
    (outcome) =>
      showSignInOutcome(page, outcome, {
        login: (retry) => showLoginFor(flow, page, request, retry),
        consent: (session, cookies) => continueSignedIn(flow, page, request, session, cookies),
      }),
    () => errorPage(page.exchange, 500, OAuthErrors.serverError.description),
  );
}

/** The consent form: the interaction shown, the request again, the decision, then the code. */
function submitConsent(flow: AuthorizeFlow, page: PageRequest): void {
  if (!checkedForm(flow, page)) return;
  const consent = shownConsent(flow, page);
  if (consent === undefined) return;
  // The request again: the client or its redirect URI may have been disabled since.
  const { interaction } = consent;
  guarded(page, async () => {
    const request = await validated(flow, page.exchange, consent.query, {
      pushed: interaction.pushed === true,
      signed: interaction.signed === true,
    });
    if (request !== undefined) decideConsent(flow, page, request, consent);
  });
}

/** The user's decision on the consent page `consent` shown, for `request` validated again. */
function decideConsent(flow: AuthorizeFlow, page: PageRequest, request: AuthorizeRequest, consent: ShownConsent): void {
  const shown = new Set(consent.interaction.scopes);
  if (!request.scopes.scopes.every((s) => shown.has(s))) {
    // The config changed under the open form (an omitted scope now resolves to more).
    errorPage(page.exchange, 400, formExpired);
    return;
  }
  const decision = page.form.decision;
  if (decision !== 'allow' && decision !== 'deny') {
    errorPage(page.exchange, 400, 'Choose allow or deny.');
    return;
  }
  const { session } = consent;
  // Only a page that offered the checkbox can remember (the interaction says whether it did),
  // and only while the client still allows it: a forged `remember=on` is ignored.
  const offered = consent.interaction.remember === true && request.client.config.allowRememberConsent;
  const remember = offered && page.form.remember === 'on';
  const event = {
    clientId: request.client.clientId,
    subject: session.sub,
    remoteAddress: page.remoteAddress,
    details: { scopes: request.scopes.scopes, remembered: decision === 'allow' && remember },
  };
  if (decision === 'deny') {
    flow.deps.events.emit({ name: 'ConsentDenied', outcome: 'failure', error: 'access_denied', ...event });
    redirect(page.exchange, responseUrl(flow, request, errorMembers(OAuthErrors.accessDenied)));
    return;
  }
  guarded(page, async () => {
    // The latest decision is the one remembered: not ticking the box forgets an earlier one.
    if (offered) {
      const granted = remember ? { scopes: request.scopes.scopes, resources: request.resources } : undefined;
      await rememberDecision(flow.deps.store, session.sub, request.client, granted, flow.now());
    }
    const code = await issueCode(flow, request, session);
    flow.deps.events.emit({ name: 'ConsentGranted', outcome: 'success', ...event });
    redirect(page.exchange, responseUrl(flow, request, { code }));
  });
}

/** Runs a step that awaits the store: a failure is an error page, never an unanswered request. */
function guarded(page: PageRequest, run: () => Promise<void>): void {
  // A rethrow here would be an unhandled rejection (the process ends) and an unanswered page.
  run().catch((err: unknown) =>
    isStoreUnavailable(err)
      ? errorPage(page.exchange, 503, 'The service is temporarily unavailable. Try again in a moment.')
      : errorPage(page.exchange, 500, 'The sign-in could not be completed. Try again from the application.'),
  );
}

/**
 * The request, validated; an error page or an error redirect when it is refused. Its client is
 * found first, in the store when it is not the config file's (docs/architecture.md, "Clients in
 * the store"): rejects when the store cannot tell whether there is one (a 503 page, `guarded`).
 */
async function validated(
  flow: AuthorizeFlow,
  exchange: Exchange,
  query: string,
  origin: RequestOrigin,
): Promise<AuthorizeRequest | undefined> {
  const { deps } = flow;
  const parsed = parseAuthorizeQuery(query);
  if (!parsed.ok) {
    errorPage(exchange, 400, parsed.message, 'Sign-in request refused');
    return undefined;
  }
  const clientId = parsed.params.client_id;
  const client = clientId === undefined ? undefined : await deps.clients.find(clientId);
  const outcome = validateAuthorizeParams(parsed.params, query, client, flow.rules, origin);
  if (outcome.kind === 'ok') return outcome.request;
  if (outcome.kind === 'page') errorPage(exchange, 400, outcome.message, 'Sign-in request refused');
  else
    redirect(
      exchange,
      authorizationResponseUrl(outcome.redirectUri, deps.config.issuer, {
        error: outcome.error,
        error_description: outcome.description,
        state: outcome.state,
      }),
    );
  return undefined;
}

// The login form carries the original query: check the form, then the request again.
async function submittedRequest(flow: AuthorizeFlow, page: PageRequest): Promise<AuthorizeRequest | undefined> {
  if (!checkedForm(flow, page)) return undefined;
  const { query, origin } = openCarriedRequest(flow.deps.secrets, page.form.request ?? '', flow.now());
  return await validated(flow, page.exchange, query, origin);
}

function checkedForm(flow: AuthorizeFlow, page: PageRequest): boolean {
  if (flow.deps.secrets.checkCsrf(page, page.form.csrf_token)) return true;
  errorPage(page.exchange, 400, formExpired);
  return false;
}

/**
 * Only a consent page this service showed, to this session, after the sign-in its request
 * required, and not too long ago: a form put together by hand (the query of a prompt=login
 * request, wider scopes) names no interaction and is refused.
 */
interface ShownConsent {
  readonly session: Session;
  readonly interaction: ConsentInteraction;
  readonly query: string;
}

function shownConsent(flow: AuthorizeFlow, page: PageRequest): ShownConsent | undefined {
  const { secrets } = flow.deps;
  const session = secrets.readSession(page.cookies);
  const interaction = openConsentInteraction(secrets, page.form.interaction, session, flow.now());
  if (interaction === undefined || session === undefined) {
    errorPage(page.exchange, 400, formExpired);
    return undefined;
  }
  // A `scope` member may narrow the grant to some of the scopes shown, never widen it.
  const query = narrowedQuery(interaction, page.form.scope);
  if (query === undefined) {
    errorPage(page.exchange, 400, 'The form asks for access that was not shown. Go back to the application and start again.');
    return undefined;
  }
  return { session, interaction, query };
}

function showLoginFor(flow: AuthorizeFlow, page: PageRequest, request: AuthorizeRequest, retry: LoginRetry = {}): void {
  const carried = carryRequest(flow.deps.secrets, request, flow.now());
  showLogin(page, flow.deps.secrets, { ...retry, action: loginPath, request: carried, client: request.client });
}

function showConsentFor(flow: AuthorizeFlow, page: PageRequest, request: AuthorizeRequest, session: Session, cookies?: string[]): void {
  const { secrets } = flow.deps;
  showConsent(
    page,
    secrets,
    {
      action: consentPath,
      client: request.client,
      session,
      scopes: request.scopes.scopes,
      descriptions: flow.descriptions,
      interaction: sealConsentInteraction(secrets, request, session, flow.now()),
      remember: request.client.config.allowRememberConsent,
    },
    cookies,
  );
}

// A session counts only if it was made for what this request asks of the sign-in: not under
// prompt=login, and not older than max_age (OIDC Core §3.1.2.1: the user MUST be authenticated
// again).
function usableSession(flow: AuthorizeFlow, request: AuthorizeRequest, cookies: string): Session | undefined {
  const session = flow.deps.secrets.readSession(cookies);
  if (session === undefined || request.prompt.has('login')) return undefined;
  if (request.maxAge !== undefined && !signedInWithin(session, request.maxAge, flow.now())) return undefined;
  if ((request.acr.idp ?? 'local') !== (session.claims.idp ?? 'local')) return undefined;
  if (request.acr.tenant !== undefined && request.acr.tenant !== session.claims.tenant) return undefined;
  return session;
}

function responseUrl(flow: AuthorizeFlow, request: AuthorizeRequest, members: Record<string, string | undefined>): string {
  return authorizationResponseUrl(request.redirectUri, flow.deps.config.issuer, { ...members, state: request.state });
}

/**
 * Writes the code record the code grant redeems (workers/grants/authorization_code.ts); with
 * `offline_access`, the grant family is noted first for the user's grants page.
 */
async function issueCode(flow: AuthorizeFlow, request: AuthorizeRequest, session: Session): Promise<string> {
  const family = newFamilyId();
  if (request.scopes.scopes.includes('offline_access'))
    await recordGrantFamily(flow.deps.store, session.sub, request.client, family, flow.now());
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
    ...(request.dpopJkt !== undefined ? { dpopJkt: request.dpopJkt } : {}),
    family,
    createdAt: flow.now(),
  };
  await flow.deps.store.set(handle.key, record, request.client.config.authorizationCodeLifetime * 1000);
  return handle.handle;
}

const formExpired = 'The form has expired. Go back to the application and start again.';

function redirect(exchange: Exchange, location: string, cookies: string[] = []): void {
  exchange.sendPage(302, '', { location, cookies });
}

/** Whether the session's sign-in (`auth_time`, seconds) is at most `seconds` old. */
function signedInWithin(session: Session, seconds: number, nowMs: number): boolean {
  const authTime = session.claims.auth_time;
  if (typeof authTime !== 'number') return false;
  return Math.floor(nowMs / 1000) - authTime <= seconds;
}
