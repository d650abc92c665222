import type { RegisteredClient } from '../../core/client_model.js';
import { OAuthErrors } from '../../core/oauth_errors.js';
import type { AuditEvents } from '../observability/events/audit_events.js';
import type { WorkerDispatcher } from '../dispatch/worker_dispatcher.js';
import type { PageSecrets, Session } from './session.js';

/** What a sign-in on a page came to. */
export type SignInOutcome =
  | { kind: 'signed_in'; session: Session; cookie: string }
  /** Show the login form again with this message (and, on 429, when to try again). */
  | { kind: 'retry'; status: number; message: string; retryAfter?: number }
  /** Stop with an error page. */
  | { kind: 'error'; status: number; message: string };

/**
 * Checks a login form's credentials in a worker, with the password grant's validator and
 * throttle (argon2 never runs on the gateway thread), and starts a session on success.
 */
export async function signIn(
  dispatcher: WorkerDispatcher,
  secrets: PageSecrets,
  input: {
    client: RegisteredClient;
    form: Record<string, string | undefined>;
    scope: string;
    acrValues?: readonly string[];
    address: string;
  },
  events: AuditEvents,
): Promise<SignInOutcome> {
  const { username, password } = input.form;
  if (username === undefined || password === undefined) return { kind: 'retry', status: 400, message: 'Enter your username and password.' };
  const params = Object.assign(Object.create(null) as Record<string, string>, { username, password, scope: input.scope });
  if (input.acrValues !== undefined && input.acrValues.length > 0) params.acr_values = input.acrValues.join(' ');
  const [status, body, retryAfter, error, facts] = await dispatcher.call({
    kind: 'login',
    clientId: input.client.clientId,
    params,
    address: input.address,
    // A store-kept client travels with the item: the worker knows only the config file's.
    ...(input.client.stored === undefined ? {} : { client: input.client.stored }),
  });
  // The worker's password check says how it ended (wire/task_facts.ts).
  const login = facts?.login;
  if (login !== undefined) {
    events.emit({
      name: login.success ? 'UserLoginSuccess' : 'UserLoginFailure',
      outcome: login.success ? 'success' : 'failure',
      clientId: input.client.clientId,
      subject: login.subject,
      username: login.username,
      remoteAddress: input.address,
      error: login.reason,
      endpoint: 'login_page',
    });
  }
  if (status === 200) {
    const user = JSON.parse(body) as { subject: string; claims: Session['claims'] };
    const session = secrets.newSession(user.subject, user.claims, username);
    return { kind: 'signed_in', session, cookie: secrets.sessionCookie(session) };
  }
  if (status === 429)
    return {
      kind: 'retry',
      status: 429,
      message: 'Too many failed attempts. Try again later.',
      ...(retryAfter === null ? {} : { retryAfter }),
    };
  if (error === 'invalid_grant') return { kind: 'retry', status: 400, message: OAuthErrors.wrongPassword.description };
  if (status === 400) return { kind: 'error', status: 400, message: 'This sign-in is not allowed for the application.' };
  // The password lane is full or the store is down: the form again, with when to come back.
  if (status === 503)
    return {
      kind: 'retry',
      status: 503,
      message: 'The service is busy. Try again in a moment.',
      retryAfter: retryAfter ?? 1,
    };
  return { kind: 'error', status: 503, message: 'The service is temporarily unavailable. Try again in a moment.' };
}
