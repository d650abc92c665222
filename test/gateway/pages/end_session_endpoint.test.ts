// RP-initiated logout (gateway/pages/end_session_endpoint.ts; OpenID Connect RP-Initiated Logout
// 1.0) over real HTTP: a valid ID token hint for the signed-in user ends the page session at once
// and returns to a registered URI with `state`; anything else asks first, on a form bound to the
// browser; an unregistered or unproven return address is never redirected to.
import t from 'tap';
import { SignJWT, importJWK, type JWK } from 'jose';
import { generateSigningKey } from '../../../gateway/keys/key_loader.js';
import { AuthorizeFlow, codeFlowClient, pkcePair } from '../../helpers/authorize_flow.js';
import { BrowserSession, type PageResponse } from '../../helpers/browser_session.js';
import { addPasswordFixtures, passwordFixtures } from '../../helpers/password_users.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

const fixtures = await passwordFixtures();
const loggedOut = 'https://app.example/logged-out';

const gw = await startTestGateway(t, {
  patch: (raw) => {
    addPasswordFixtures(raw, fixtures);
    (raw.clients as unknown[]).push(
      codeFlowClient('web', { clientName: 'Web App', postLogoutRedirectUris: [loggedOut] }),
      codeFlowClient('other'),
    );
  },
});
const endSession = `${gw.url}/connect/endsession`;

/** A signed-in browser and an ID token of `clientId` for alice. */
async function signedIn(
  clientId = 'web',
  user?: { username: string; password: string },
): Promise<{ flow: AuthorizeFlow; idToken: string }> {
  const flow = new AuthorizeFlow(gw);
  const pkce = pkcePair();
  const code = await flow.code(flow.params(clientId, pkce.challenge), user);
  const answer = await flow.token(
    {
      grant_type: 'authorization_code',
      code: code.get('code') as string,
      redirect_uri: 'http://127.0.0.1:5002/callback',
      code_verifier: pkce.verifier,
    },
    { clientId, secret: 'secret' },
  );
  const tokens = JSON.parse(answer.body) as { id_token: string };
  return { flow, idToken: tokens.id_token };
}

function sessionCleared(page: PageResponse): boolean {
  return page.headers.getSetCookie().some((c) => /^tessera\.session=;/.test(c) && /Max-Age=0/.test(c));
}

async function authorizeSkipsLogin(flow: AuthorizeFlow): Promise<boolean> {
  const page = await flow.authorize(flow.params('web', pkcePair().challenge));
  return !page.body.includes('name="password"');
}

t.test('a valid hint for the signed-in user: signed out at once, back to the registered URI with state', async (t) => {
  const { flow, idToken } = await signedIn();
  t.ok(await authorizeSkipsLogin(flow), 'signed in: the authorization endpoint skips the login page');
  const query = new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: loggedOut, state: 'st-9' });
  const answer = await flow.browser.get(`${endSession}?${query}`);
  t.equal(answer.status, 302);
  t.equal(answer.location, `${loggedOut}?state=st-9`);
  t.ok(sessionCleared(answer), 'the session cookie is deleted');
  t.notOk(await authorizeSkipsLogin(flow), 'the next authorization request asks for a sign-in again');
});

t.test('POST works the same; without a return address the browser sees a signed-out page', async (t) => {
  const { flow, idToken } = await signedIn();
  const answer = await flow.browser.post(endSession, { id_token_hint: idToken });
  t.equal(answer.status, 200);
  t.match(answer.body, 'You are signed out');
  t.ok(sessionCleared(answer));
});

t.test('without a hint the user confirms on a form bound to this browser; staying changes nothing', async (t) => {
  const { flow } = await signedIn();
  const ask = await flow.browser.get(`${endSession}?client_id=web&post_logout_redirect_uri=${encodeURIComponent(loggedOut)}&state=s1`);
  t.equal(ask.status, 200);
  t.match(ask.body, /Web App<\/strong> asks to sign you out/);
  t.notOk(sessionCleared(ask), 'asking ends nothing');

  const stranger = new BrowserSession();
  const forged = await stranger.post(`${endSession}/confirm`, {
    csrf_token: ask.hidden('csrf_token'),
    request: ask.hidden('request'),
    decision: 'logout',
  });
  t.equal(forged.status, 400, "another browser cannot post this browser's form");

  const stay = await flow.browser.post(`${endSession}/confirm`, {
    csrf_token: ask.hidden('csrf_token'),
    request: ask.hidden('request'),
    decision: 'stay',
  });
  t.equal(stay.status, 200);
  t.notOk(sessionCleared(stay));
  t.ok(await authorizeSkipsLogin(flow), 'still signed in');

  const again = await flow.browser.get(`${endSession}?client_id=web&post_logout_redirect_uri=${encodeURIComponent(loggedOut)}&state=s1`);
  const out = await flow.browser.post(`${endSession}/confirm`, {
    csrf_token: again.hidden('csrf_token'),
    request: again.hidden('request'),
    decision: 'logout',
  });
  t.equal(out.status, 302);
  t.equal(out.location, `${loggedOut}?state=s1`);
  t.ok(sessionCleared(out));
});

t.test('a hint for another user than the signed-in one asks first', async (t) => {
  const { flow } = await signedIn();
  const carol = await signedIn('web', { username: 'carol', password: 'pässwörd ✓ 密码' });
  const ask = await flow.browser.get(`${endSession}?id_token_hint=${carol.idToken}`);
  t.equal(ask.status, 200);
  t.match(ask.body, 'Sign out?', "carol's hint in alice's browser: the user is asked");
  t.notOk(sessionCleared(ask));
  const sameUser = await signedIn();
  const out = await flow.browser.get(`${endSession}?id_token_hint=${sameUser.idToken}`);
  t.match(out.body, 'You are signed out', "another of alice's ID tokens: the same subject, no question");
  t.ok(sessionCleared(out));
});

t.test('refused: forged or foreign hints, unregistered return addresses, mismatched clients', async (t) => {
  const { idToken } = await signedIn();
  const foreignKey = await generateSigningKey('ES256');
  const forged = await new SignJWT({ sub: 'sub-alice', aud: 'web' })
    .setProtectedHeader({ alg: 'ES256', kid: foreignKey.kid })
    .setIssuer(gw.config.issuer)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(await importJWK(foreignKey.jwk as JWK, 'ES256'));
  const { idToken: otherClientToken } = await signedIn('other');
  const cases: [string, Record<string, string>][] = [
    ['a hint signed by another key', { id_token_hint: forged }],
    ['a hint that is not a JWT', { id_token_hint: 'garbage' }],
    ['an unregistered return address', { id_token_hint: idToken, post_logout_redirect_uri: 'https://evil.example/' }],
    ['a return address with no client to check it against', { post_logout_redirect_uri: loggedOut }],
    ['a return address another client registered', { id_token_hint: otherClientToken, post_logout_redirect_uri: loggedOut }],
    ['client_id that is not the hint’s audience', { id_token_hint: idToken, client_id: 'other' }],
    ['an unknown client', { client_id: 'nobody' }],
  ];
  for (const [what, params] of cases) {
    const browser = new BrowserSession();
    const answer = await browser.get(`${endSession}?${new URLSearchParams(params)}`);
    t.equal(answer.status, 400, what);
    t.equal(answer.location, null, `${what}: no redirect`);
    t.match(answer.body, 'The sign-out request is not valid.', what);
  }
  const duplicated = await new BrowserSession().get(`${endSession}?state=a&state=b`);
  t.equal(duplicated.status, 400, 'a repeated parameter');
});

t.test('an access token is no ID token hint', async (t) => {
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from('m2m:secret').toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials&scope=api1',
  });
  const { access_token } = (await res.json()) as { access_token: string };
  const answer = await new BrowserSession().get(`${endSession}?id_token_hint=${access_token}`);
  t.equal(answer.status, 400);
});

t.test('discovery names the endpoint', async (t) => {
  const doc = (await (await fetch(`${gw.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
  t.equal(doc.end_session_endpoint, endSession);
});
