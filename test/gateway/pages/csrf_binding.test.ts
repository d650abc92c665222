// The pages' CSRF defence against an attacker on the same site (docs/security.md): a page on a
// sibling subdomain or another port gets SameSite=Lax cookies sent along and can toss its own
// CSRF cookie into the victim's browser. Each test replays the attack with two cookie jars: the
// attacker's own browser, where the attacker obtains a valid cookie and token, and the victim's.
import t from 'tap';
import { AuthorizeFlow, callbackUri, codeFlowClient, pkcePair } from '../../helpers/authorize_flow.js';
import { BrowserSession } from '../../helpers/browser_session.js';
import { addPasswordFixtures, passwordFixtures } from '../../helpers/password_users.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

const fixtures = await passwordFixtures();
const deviceGrant = 'urn:ietf:params:oauth:grant-type:device_code';
const formExpired = 'The form has expired.';

const gw = await startTestGateway(t, {
  patch: (raw) => {
    addPasswordFixtures(raw, fixtures);
    (raw.clients as unknown[]).push(codeFlowClient('web'), {
      clientId: 'tv',
      requireClientSecret: false,
      allowedGrantTypes: [deviceGrant],
      allowedScopes: ['api1'],
    });
  },
});
const { challenge } = pkcePair();
const webParams = {
  client_id: 'web',
  redirect_uri: callbackUri,
  response_type: 'code',
  scope: 'openid api1',
  state: 's',
  code_challenge: challenge,
  code_challenge_method: 'S256',
};

/** A signed-in victim: alice, through the code flow. */
async function signedInVictim(): Promise<AuthorizeFlow> {
  const flow = new AuthorizeFlow(gw);
  await flow.code(webParams);
  t.type(flow.browser.cookie('tessera.session'), 'string');
  return flow;
}

async function deviceAuthorization(): Promise<{ device_code: string; user_code: string }> {
  const res = await fetch(`${gw.url}/connect/deviceauthorization`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'client_id=tv&scope=api1',
  });
  return (await res.json()) as { device_code: string; user_code: string };
}

async function poll(deviceCode: string): Promise<string> {
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: deviceGrant, device_code: deviceCode, client_id: 'tv' }).toString(),
  });
  return ((await res.json()) as { error?: string; access_token?: string }).error ?? 'token';
}

t.test("device approval by CSRF: the attacker's cookie and token do not approve in the victim's session", async (t) => {
  const device = await deviceAuthorization();
  // The attacker's own browser: a valid CSRF cookie and a token for it, signed out...
  const attacker = new BrowserSession();
  const entry = await attacker.get(`${gw.url}/device`);
  const attackerCookie = attacker.cookie('tessera.csrf') as string;
  const signedOutToken = entry.hidden('csrf_token');
  // ...and one minted while the attacker is signed in (their own session).
  const attackerFlow = new AuthorizeFlow(gw, attacker);
  await attackerFlow.code(webParams, { username: 'carol', password: 'pässwörd ✓ 密码' });
  const signedInToken = (await attacker.get(`${gw.url}/device`)).hidden('csrf_token');

  const victim = await signedInVictim();
  for (const [name, token] of [
    ['signed out', signedOutToken],
    ['signed in as the attacker', signedInToken],
  ] as const) {
    victim.browser.setCookie('tessera.csrf', attackerCookie); // tossed from a sibling subdomain
    const answer = await victim.browser.post(`${gw.url}/device/consent`, {
      csrf_token: token,
      request: device.user_code,
      decision: 'allow',
    });
    t.equal(answer.status, 400, `a token minted ${name} is refused`);
    t.match(answer.body, formExpired);
  }
  t.equal(await poll(device.device_code), 'authorization_pending', "the attacker's device is not connected to the victim");

  // Control: the victim's own form, in the victim's own browser, approves.
  const own = new AuthorizeFlow(gw);
  await own.code(webParams);
  const consent = await own.browser.post(`${gw.url}/device`, {
    csrf_token: (await own.browser.get(`${gw.url}/device`)).hidden('csrf_token'),
    user_code: device.user_code,
  });
  t.match(consent.body, 'value="allow"');
  const approved = await own.browser.post(`${gw.url}/device/consent`, {
    csrf_token: consent.hidden('csrf_token'),
    request: device.user_code,
    decision: 'allow',
  });
  t.equal(approved.status, 200);
  t.equal(await poll(device.device_code), 'token', 'a form of the same browser and session works');
});

t.test('forced consent: a token minted for no session is refused once the browser is signed in', async (t) => {
  const victim = new AuthorizeFlow(gw);
  const login = await victim.authorize(webParams);
  const beforeSignIn = login.hidden('csrf_token');
  const consent = await victim.login(login, 'alice', 'alice-pw');
  t.match(consent.body, 'value="allow"');
  const answer = await victim.decide(consent, 'allow', { csrf_token: beforeSignIn });
  t.equal(answer.status, 400);
  t.equal(answer.location, null, 'no code');
  t.equal((await victim.decide(consent, 'allow')).status, 302, "the consent page's own token works");
});

t.test('login CSRF and forced consent from another origin are refused', async (t) => {
  // The victim is signed out; the attacker's page on another origin posts the attacker's
  // credentials with a cookie and token from the attacker's browser.
  const attacker = new AuthorizeFlow(gw);
  const login = await attacker.authorize(webParams);
  const victim = new BrowserSession();
  victim.setCookie('tessera.csrf', attacker.browser.cookie('tessera.csrf') as string);
  const form = { csrf_token: login.hidden('csrf_token'), request: login.hidden('request'), username: 'carol', password: 'pässwörd ✓ 密码' };
  const crossOrigin = await victim.post(`${gw.url}/connect/authorize/login`, form, { origin: 'http://attacker.example' });
  t.equal(crossOrigin.status, 400);
  t.match(crossOrigin.body, formExpired);
  t.equal(victim.cookie('tessera.session'), undefined, 'the victim is not signed in as the attacker');

  // Forced consent: a signed-in victim, the victim's own valid form, posted from another origin.
  const flow = await signedInVictim();
  const page = await flow.authorize(webParams);
  const forced = await flow.browser.post(
    `${gw.url}/connect/authorize/consent`,
    { csrf_token: page.hidden('csrf_token'), interaction: page.hidden('interaction'), decision: 'allow' },
    { origin: 'http://127.0.0.1:1' },
  );
  t.equal(forced.status, 400, 'another port is another origin');
  t.equal(forced.location, null);
  const opaque = await flow.browser.post(
    `${gw.url}/connect/authorize/consent`,
    { csrf_token: page.hidden('csrf_token'), interaction: page.hidden('interaction'), decision: 'allow' },
    { origin: 'null' },
  );
  t.equal(opaque.status, 400, 'Origin: null (a sandboxed frame, a no-referrer page) is not the issuer');
  const sameOrigin = await flow.browser.post(
    `${gw.url}/connect/authorize/consent`,
    { csrf_token: page.hidden('csrf_token'), interaction: page.hidden('interaction'), decision: 'allow' },
    { origin: new URL(gw.url).origin },
  );
  t.equal(sameOrigin.status, 302, "the issuer's own origin is accepted");
});
