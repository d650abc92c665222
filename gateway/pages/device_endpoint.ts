import type { Logger } from 'pino';
import type { TemplatedApp } from 'uWebSockets.js';
import type { TesseraConfig } from '../config/schema.js';
import type { RegisteredClient } from '../../core/client_model.js';
import { OAuthErrors } from '../../core/oauth_errors.js';
import { FailureThrottle, type ThrottleState, whenBlockEnds } from '../../core/throttles.js';
import { isStoreUnavailable, type Store } from '../../core/store/store.js';
import { normalizeUserCode, userCodeKey, type DeviceCodeRecord, type UserCodeRecord } from '../../core/records/device_code_record.js';
import type { WorkerDispatcher } from '../dispatch/worker_dispatcher.js';
import { devicePagePath } from '../endpoints/device_authorization_endpoint.js';
import { createPageRoute, errorPage, type PageRequest } from './page_form.js';
import { readCookie, type PageSecrets, type Session } from './session.js';
import { renderPage } from './templates.js';
import { signIn } from './sign_in.js';
import { clientName, ScopeDescriptions, showConsent, showLogin, showSignInOutcome, type LoginRetry } from './page_views.js';
import type { AuditEvents } from '../observability/events/audit_events.js';
import type { ClientFinder } from '../client_registry/client_directory.js';
import { recordGrantFamily } from './user_grants.js';

const loginPath = `${devicePagePath}/login`;
const consentPath = `${devicePagePath}/consent`;

export interface DeviceEndpointDeps {
  config: Pick<TesseraConfig, 'identityResources' | 'apiScopes' | 'throttling'>;
  /** The config file's clients, then the store's. */
  clients: ClientFinder;
  secrets: PageSecrets;
  dispatcher: WorkerDispatcher;
  store: Store;
  logger: Logger;
  /** Sign-ins and device decisions are audit events (docs/operations.md, "Events"). */
  events: AuditEvents;
  /** Told of each request the user-code throttle refuses (`tessera_throttle_hits_total{throttle="user_code"}`). */
  onThrottled?: () => void;
  now?: () => number;
}

/** A user code that leads to a pending device authorization. */
interface PendingDevice {
  readonly userCode: string;
  readonly pointer: UserCodeRecord;
  readonly record: DeviceCodeRecord;
  readonly client: RegisteredClient;
}

type BlockedState = Extract<ThrottleState, { blocked: true }>;

function isBlocked(found: PendingDevice | BlockedState | undefined): found is BlockedState {
  return found !== undefined && 'blocked' in found;
}

const invalidCode = 'That code is not valid or has expired. Check the code on your device.';
const tooManyCodes = 'Too many wrong codes. Try again later.';

/** What every step of the device page reads. */
interface DeviceFlow {
  readonly deps: DeviceEndpointDeps;
  readonly now: () => number;
  /** Wrong codes, per source address and per browser. */
  readonly byAddress: FailureThrottle;
  readonly byBrowser: FailureThrottle;
  readonly descriptions: ScopeDescriptions;
}

/**
 * The verification page of the device flow (RFC 8628 §3.3): enter the user code, sign in (the
 * same credential check and throttle as the other pages), then allow or deny. Wrong codes get one
 * answer and are throttled per source address and per browser.
 */
export function registerDeviceEndpoint(app: TemplatedApp, deps: DeviceEndpointDeps): void {
  const now = deps.now ?? Date.now;
  const flow: DeviceFlow = {
    deps,
    now,
    byAddress: new FailureThrottle(deps.store, 'uc-addr', deps.config.throttling.userCode, now),
    byBrowser: new FailureThrottle(deps.store, 'uc-browser', deps.config.throttling.userCode, now),
    descriptions: new ScopeDescriptions(deps.config, 'device'),
  };
  app.any(
    devicePagePath,
    createPageRoute(['get', 'post'], (page) => codeEntry(flow, page)),
  );
  app.any(
    loginPath,
    createPageRoute(['post'], (page) => withDevice(flow, page, (device) => submitLogin(flow, page, device))),
  );
  app.any(
    consentPath,
    createPageRoute(['post'], (page) => withDevice(flow, page, (device) => submitConsent(flow, page, device))),
  );
}

/** The code entry form, and the code it posts. */
function codeEntry(flow: DeviceFlow, page: PageRequest): void {
  if (page.method === 'get') {
    // verification_uri_complete only fills the form in: the user compares the code with the
    // device and submits it (RFC 8628 §3.3.1, §5.4), so a link alone starts nothing.
    showEntry(flow, page, 200, undefined, new URLSearchParams(page.query).get('user_code') ?? undefined);
    return;
  }
  if (!flow.deps.secrets.checkCsrf(page, page.form.csrf_token)) {
    showEntry(flow, page, 400, 'The form has expired. Enter the code again.');
    return;
  }
  guard(page, () => enterCode(flow, page, page.form.user_code));
}

async function enterCode(flow: DeviceFlow, page: PageRequest, typed: string | undefined): Promise<void> {
  const device = await findDevice(flow, page, typed);
  if (isBlocked(device)) {
    showBlocked(flow, page, device);
    return;
  }
  if (device === undefined) {
    showEntry(flow, page, 400, invalidCode, typed);
    return;
  }
  const session = flow.deps.secrets.readSession(page.cookies);
  if (session === undefined) showLoginFor(flow, page, device);
  else showConsentFor(flow, page, device, session);
}

/** The sign-in form: the credentials (in a worker), then the consent form. */
async function submitLogin(flow: DeviceFlow, page: PageRequest, device: PendingDevice): Promise<void> {
  const { deps } = flow;
  const outcome = await signIn(
    deps.dispatcher,
    deps.secrets,
    {
      client: device.client,
      form: page.form,
      scope: device.record.scopes.join(' '),
      address: page.remoteAddress,
    },
    deps.events,
  );
  showSignInOutcome(page, outcome, {
    login: (retry) => showLoginFor(flow, page, device, retry),
    consent: (session, cookies) => showConsentFor(flow, page, device, session, cookies),
  });
}

/** The consent form: the decision, written once, then the page that says so. */
async function submitConsent(flow: DeviceFlow, page: PageRequest, device: PendingDevice): Promise<void> {
  const session = flow.deps.secrets.readSession(page.cookies);
  if (session === undefined) {
    showLoginFor(flow, page, device);
    return;
  }
  const decision = page.form.decision;
  if (decision !== 'allow' && decision !== 'deny') {
    errorPage(page.exchange, 400, 'Choose allow or deny.');
    return;
  }
  if (!(await recordDecision(flow, device, session, decision))) {
    showEntry(flow, page, 400, invalidCode);
    return;
  }
  // Never the user code or the device code: they are the credentials being decided on.
  flow.deps.events.emit({
    name: decision === 'allow' ? 'DeviceAuthorizationSuccess' : 'DeviceAuthorizationDenied',
    outcome: decision === 'allow' ? 'success' : 'failure',
    clientId: device.client.clientId,
    subject: session.sub,
    remoteAddress: page.remoteAddress,
    ...(decision === 'allow' ? {} : { error: 'access_denied' }),
  });
  page.exchange.sendPage(
    200,
    decision === 'allow'
      ? renderPage('done', 'Device connected', {
          message: `${clientName(device.client)} is now connected. You can return to your device.`,
        })
      : renderPage('done', 'Access denied', { message: `${clientName(device.client)} was not given access.` }),
  );
}

/**
 * Writes the decision the device code grant reads; `false` when another submission decided
 * first. One decision per code: claiming the user code is the atomic step, so of concurrent
 * submissions (a double click, two browsers) exactly one writes a decision. A write after a lost
 * race could otherwise bring back an approval the device already redeemed.
 */
async function recordDecision(flow: DeviceFlow, device: PendingDevice, session: Session, decision: 'allow' | 'deny'): Promise<boolean> {
  const { store } = flow.deps;
  const decided: DeviceCodeRecord =
    decision === 'allow'
      ? { ...device.record, status: 'approved', subject: session.sub, claims: session.claims, sid: session.sid }
      : { ...device.record, status: 'denied' };
  const claimed = await store.consume<UserCodeRecord>(userCodeKey(device.userCode));
  if (claimed.status !== 'consumed') return false;
  // For the user's grants page: after the claim, so that only the user who decided gets it.
  if (decision === 'allow' && device.record.scopes.includes('offline_access'))
    await recordGrantFamily(store, session.sub, device.client, device.record.family, flow.now());
  const ttl = Math.max(1000, device.record.expiresAt - flow.now()) + 10 * 60 * 1000;
  await store.set(device.pointer.deviceKey, decided, ttl);
  return true;
}

// The sign-in and consent forms carry the user code: check the form, then the code (throttled).
function withDevice(flow: DeviceFlow, page: PageRequest, run: (device: PendingDevice) => Promise<void>): void {
  if (!flow.deps.secrets.checkCsrf(page, page.form.csrf_token)) {
    showEntry(flow, page, 400, 'The form has expired. Enter the code again.');
    return;
  }
  guard(page, async () => {
    const device = await findDevice(flow, page, page.form.request);
    if (isBlocked(device)) {
      showBlocked(flow, page, device);
      return;
    }
    if (device === undefined) {
      showEntry(flow, page, 400, invalidCode);
      return;
    }
    await run(device);
  });
}

function guard(page: PageRequest, run: () => Promise<void>): void {
  run().catch((err: unknown) => {
    if (isStoreUnavailable(err)) errorPage(page.exchange, 503, 'The service is temporarily unavailable. Try again in a moment.');
    else errorPage(page.exchange, 500, OAuthErrors.serverError.description);
  });
}

// Every form that carries a code goes through here: the sign-in and consent forms carry it in a
// hidden input, which a guesser can fill as easily as the visible one (RFC 8628 §5.1).
async function findDevice(
  flow: DeviceFlow,
  page: PageRequest,
  typed: string | undefined,
): Promise<PendingDevice | BlockedState | undefined> {
  const { state, refund } = await countAttempt(flow, page);
  if (state.blocked) return state;
  const device = await lookUp(flow, typed);
  if (device !== undefined) await refund();
  return device;
}

// Throttled by address and by browser (its CSRF cookie). Every code is counted on the store's
// atomic increment before it is looked at, so a parallel burst of guesses gets at most the limit
// looked up; a code that turns out good is taken back, so a user who enters a right code three
// times (entry, sign-in and consent forms) is not counted against (docs/security.md, "Throttles").
async function countAttempt(flow: DeviceFlow, page: PageRequest): Promise<{ state: ThrottleState; refund: () => Promise<unknown> }> {
  const { byAddress, byBrowser, deps } = flow;
  const browser = readCookie(page.cookies, deps.secrets.csrfCookieName);
  const states = await Promise.all([
    byAddress.attempt(page.remoteAddress),
    browser === undefined ? { blocked: false as const } : byBrowser.attempt(browser),
  ]);
  // Security events (docs/security.md): one line when a block starts and one when it ends. The
  // browser is named by nothing: its cookie is a CSRF secret.
  for (const [state, per] of [
    [states[0], 'address'],
    [states[1], 'browser'],
  ] as const) {
    if (!state.blocked || state.firstRefusal !== true) continue;
    const who = { address: page.remoteAddress, per };
    deps.logger.info({ ...who, retryAfterSeconds: state.retryAfterSeconds }, 'user code attempts blocked');
    whenBlockEnds(state, () => deps.logger.info(who, 'user code block ended'));
  }
  const refund = () => Promise.all([byAddress.refund(page.remoteAddress), browser === undefined ? undefined : byBrowser.refund(browser)]);
  return { state: states.find((s) => s.blocked) ?? states[0], refund };
}

async function lookUp(flow: DeviceFlow, typed: string | undefined): Promise<PendingDevice | undefined> {
  const userCode = typed === undefined ? undefined : normalizeUserCode(typed);
  if (userCode === undefined) return undefined;
  const { store, clients } = flow.deps;
  const pointer = await store.get<UserCodeRecord>(userCodeKey(userCode));
  if (pointer === null) return undefined;
  const record = await store.get<DeviceCodeRecord>(pointer.deviceKey);
  if (record === null) return undefined;
  // A store-kept client may have been deleted since it asked: then there is nothing to approve.
  const client = await clients.find(pointer.clientId);
  if (client === undefined || record.status !== 'pending' || record.expiresAt <= flow.now()) return undefined;
  return { userCode, pointer, record, client };
}

function showEntry(flow: DeviceFlow, page: PageRequest, status: number, error?: string, userCode?: string, retryAfter?: number): void {
  const csrf = flow.deps.secrets.csrfToken(page.cookies);
  page.exchange.sendPage(
    status,
    renderPage('device', 'Connect a device', { action: devicePagePath, csrfToken: csrf.token, error, userCode }),
    {
      ...(csrf.cookie ? { cookies: [csrf.cookie] } : {}),
      retryAfter,
    },
  );
}

// RFC 6585 §4: a 429 says when to come back.
function showBlocked(flow: DeviceFlow, page: PageRequest, state: BlockedState): void {
  flow.deps.onThrottled?.();
  showEntry(flow, page, 429, tooManyCodes, undefined, state.retryAfterSeconds);
}

function showLoginFor(flow: DeviceFlow, page: PageRequest, device: PendingDevice, retry: LoginRetry = {}): void {
  showLogin(page, flow.deps.secrets, { ...retry, action: loginPath, request: device.userCode, client: device.client });
}

function showConsentFor(flow: DeviceFlow, page: PageRequest, device: PendingDevice, session: Session, cookies?: string[]): void {
  showConsent(
    page,
    flow.deps.secrets,
    {
      action: consentPath,
      client: device.client,
      session,
      scopes: device.record.scopes,
      descriptions: flow.descriptions,
      request: device.userCode,
    },
    cookies,
  );
}
