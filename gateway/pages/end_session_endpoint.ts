import { createLocalJWKSet, jwtVerify, type JWTPayload } from 'jose';
import type { TemplatedApp } from 'uWebSockets.js';
import type { RegisteredClient } from '../../core/client_model.js';
import { publicJwk, type SigningKeyMaterial } from '../../core/signing_key.js';
import { createPageRoute, errorPage, type PageRequest } from './page_form.js';
import type { PageSecrets } from './session.js';
import { renderPage } from './templates.js';
import type { ClientFinder } from '../client_registry/client_directory.js';
import { isStoreUnavailable } from '../../core/store/store.js';
import { endpointPaths } from '../endpoints/endpoint_paths.js';

export const endSessionPath = endpointPaths.endSession;
const confirmPath = `${endSessionPath}/confirm`;

export interface EndSessionEndpointDeps {
  readonly issuer: string;
  /** The config file's clients, then the store's. */
  readonly clients: ClientFinder;
  readonly secrets: PageSecrets;
  /** The keys whose ID tokens a hint may be: the published ones. */
  readonly keys: () => readonly SigningKeyMaterial[];
}

/** A logout request, checked: who asks, and where the browser goes afterwards. */
interface LogoutRequest {
  readonly client: RegisteredClient | undefined;
  /** The ID token hint's subject, when a valid hint came. */
  readonly hintSubject: string | undefined;
  /** A registered post-logout redirect URI, with `state` added. */
  readonly returnTo: string | undefined;
  /** The parameters, to carry through the confirmation form and check again. */
  readonly query: string;
}

const invalidRequest = 'The sign-out request is not valid.';

/**
 * RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0): `GET` or `POST /connect/endsession`
 * with `id_token_hint`, `client_id`, `post_logout_redirect_uri` and `state`. The page session ends
 * (its cookie is deleted) and the browser returns to a URI the client registered in
 * `postLogoutRedirectUris`, or sees a signed-out page. Without a valid hint naming the signed-in
 * user the user confirms first (§2: a logout request may be forged by any page), on a form bound
 * to this browser and session like the other pages' (docs/security.md).
 */
export function registerEndSessionEndpoint(app: TemplatedApp, deps: EndSessionEndpointDeps): void {
  const { secrets } = deps;

  const signOut = (page: PageRequest, request: LogoutRequest): void => {
    const cookies = [secrets.endSessionCookie()];
    if (request.returnTo !== undefined) {
      page.exchange.sendPage(302, '', { location: request.returnTo, cookies });
      return;
    }
    page.exchange.sendPage(200, renderPage('done', 'Signed out', { message: 'You are signed out. You can close this window.' }), {
      cookies,
    });
  };

  const answer = (page: PageRequest, query: string): void => {
    checked(page, checkRequest(deps, query), (request) => {
      if (request === undefined) {
        errorPage(page.exchange, 400, invalidRequest, 'Sign-out refused');
        return;
      }
      const session = secrets.readSession(page.cookies);
      // Nothing to end, or a valid hint for the signed-in user: no question to ask (§2).
      if (session === undefined || (request.hintSubject !== undefined && request.hintSubject === session.sub)) {
        signOut(page, request);
        return;
      }
      const csrf = secrets.csrfToken(page.cookies);
      page.exchange.sendPage(
        200,
        renderPage('logout', 'Sign out', {
          action: confirmPath,
          csrfToken: csrf.token,
          request: request.query,
          clientName: request.client === undefined ? undefined : (request.client.config.clientName ?? request.client.clientId),
          userName: session.displayName,
        }),
        csrf.cookie === undefined ? {} : { cookies: [csrf.cookie] },
      );
    });
  };

  app.any(
    endSessionPath,
    createPageRoute(['get', 'post'], (page) => {
      answer(page, page.method === 'get' ? page.query : new URLSearchParams(page.form).toString());
    }),
  );

  app.any(
    confirmPath,
    createPageRoute(['post'], (page) => {
      if (!secrets.checkCsrf(page, page.form.csrf_token)) {
        errorPage(page.exchange, 400, 'The form has expired. Sign out again from the application.');
        return;
      }
      checked(page, checkRequest(deps, page.form.request ?? ''), (request) => {
        if (request === undefined) errorPage(page.exchange, 400, invalidRequest, 'Sign-out refused');
        else if (page.form.decision === 'logout') signOut(page, request);
        else page.exchange.sendPage(200, renderPage('done', 'Still signed in', { message: 'You are still signed in.' }));
      });
    }),
  );
}

/**
 * `next` with the checked request; a store that cannot say whether its client exists (a
 * store-kept client, docs/architecture.md "Clients in the store") is a 503 page, never a guess.
 */
function checked(page: PageRequest, check: Promise<LogoutRequest | undefined>, next: (request: LogoutRequest | undefined) => void): void {
  check.then(next, (err: unknown) =>
    isStoreUnavailable(err)
      ? errorPage(page.exchange, 503, 'The service is temporarily unavailable. Try again in a moment.')
      : errorPage(page.exchange, 500, 'The sign-out could not be completed. Try again from the application.'),
  );
}

/**
 * The checks of RP-Initiated Logout §2-§3: a hint must be an ID token this issuer signed (expired
 * is fine: it is a hint of who, not a credential); `client_id`, when both come, must be the
 * hint's audience; `post_logout_redirect_uri` must be registered, exactly, by that client, which
 * the hint or `client_id` must name. Anything else: no redirect at all (an open redirect).
 */
async function checkRequest(deps: EndSessionEndpointDeps, query: string): Promise<LogoutRequest | undefined> {
  const params = new URLSearchParams(query);
  for (const name of ['id_token_hint', 'client_id', 'post_logout_redirect_uri', 'state']) {
    if (params.getAll(name).length > 1) return undefined;
  }
  const hint = params.get('id_token_hint') ?? undefined;
  let hinted: JWTPayload | undefined;
  if (hint !== undefined) {
    hinted = await verifyIdToken(deps, hint);
    if (hinted === undefined) return undefined;
  }
  const hintClient = hinted === undefined ? undefined : audienceOf(hinted);
  const clientId = params.get('client_id') ?? hintClient;
  if (hintClient !== undefined && clientId !== hintClient) return undefined;
  const client = clientId === undefined ? undefined : await deps.clients.find(clientId);
  if (clientId !== undefined && client === undefined) return undefined;

  const redirect = params.get('post_logout_redirect_uri') ?? undefined;
  let returnTo: string | undefined;
  if (redirect !== undefined) {
    if (client === undefined || !client.config.postLogoutRedirectUris.includes(redirect)) return undefined;
    const state = params.get('state');
    const url = new URL(redirect);
    if (state !== null) url.searchParams.append('state', state);
    returnTo = url.href;
  }
  return { client, hintSubject: typeof hinted?.sub === 'string' ? hinted.sub : undefined, returnTo, query };
}

async function verifyIdToken(deps: EndSessionEndpointDeps, token: string): Promise<JWTPayload | undefined> {
  try {
    const keys = createLocalJWKSet({ keys: deps.keys().map(publicJwk) });
    const { payload, protectedHeader } = await jwtVerify(token, keys, {
      issuer: deps.issuer,
      // An expired ID token still says who signed in (RP-Initiated Logout §2).
      clockTolerance: Number.MAX_SAFE_INTEGER,
    });
    // An access token (RFC 9068 `at+jwt`) is not an ID token.
    if (protectedHeader.typ !== undefined && protectedHeader.typ.toLowerCase() !== 'jwt') return undefined;
    return payload;
  } catch {
    return undefined;
  }
}

/** The client an ID token was issued to: its single audience, or `azp` (OIDC Core §2). */
function audienceOf(payload: JWTPayload): string | undefined {
  if (typeof payload.aud === 'string') return payload.aud;
  if (Array.isArray(payload.aud) && payload.aud.length === 1) return payload.aud[0];
  return typeof payload.azp === 'string' ? payload.azp : undefined;
}
