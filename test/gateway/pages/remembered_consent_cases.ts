// Remembered consent (issue 34; docs/endpoints.md, "Remembered consent"), over HTTP against a real
// gateway, written once and run on each store: remembered_consent.test.ts (memory) and
// remembered_consent_redis.test.ts (a real Redis).
import type { Test } from 'tap';
import { AuthorizeFlow, callbackUri, codeFlowClient, pkcePair } from '../../helpers/authorize_flow.js';
import { addPasswordFixtures, type passwordFixtures } from '../../helpers/password_users.js';
import type { TestGateway } from '../../helpers/test_gateway.js';
import type { PageResponse } from '../../helpers/browser_session.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';

/** Every case has a client of its own: a consent is kept per (user, client), across browsers. */
export function patchRememberedConsent(raw: Record<string, unknown>, fixtures: Awaited<ReturnType<typeof passwordFixtures>>): void {
  addPasswordFixtures(raw, fixtures);
  const clients = raw.clients as unknown[];
  for (const id of ['skip', 'wider', 'prompt-consent', 'prompt-none', 'revoke'])
    clients.push(codeFlowClient(id, { clientName: `App ${id}` }));
  clients.push(
    codeFlowClient('tv', {
      clientName: 'App tv',
      allowedGrantTypes: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
      redirectUris: [],
    }),
  );
  clients.push(codeFlowClient('short', { consentLifetime: 1 }));
  clients.push(codeFlowClient('ask', { allowRememberConsent: false }));
  clients.push(codeFlowClient('ask-later', { allowRememberConsent: false }));
}

const { verifier, challenge } = pkcePair();
export const params = (clientId: string, extra: Record<string, string> = {}) => ({
  client_id: clientId,
  redirect_uri: callbackUri,
  response_type: 'code',
  scope: 'openid api1',
  state: 'st',
  code_challenge: challenge,
  code_challenge_method: 'S256',
  ...extra,
});

export const isConsentPage = (page: PageResponse) => page.status === 200 && page.body.includes('value="allow"');
const codeOf = (page: PageResponse) => (page.location === null ? null : new URL(page.location).searchParams.get('code'));
const errorOf = (page: PageResponse) => (page.location === null ? null : new URL(page.location).searchParams.get('error'));

/** Signs alice in on a new browser and answers the consent page of `clientId`, remembering or not. */
async function consented(
  gw: TestGateway,
  clientId: string,
  remember: boolean,
  extra: Record<string, string> = {},
): Promise<{ flow: AuthorizeFlow; answer: PageResponse }> {
  const flow = new AuthorizeFlow(gw);
  const login = await flow.authorize(params(clientId, extra));
  const consent = await flow.login(login, 'alice', 'alice-pw');
  if (!isConsentPage(consent)) throw new Error(`no consent page: ${consent.status} ${consent.body.slice(0, 300)}`);
  const answer = await flow.decide(consent, 'allow', remember ? { remember: 'on' } : {});
  return { flow, answer };
}

export function rememberedConsentCases(t: Test, gw: TestGateway): void {
  t.test('a remembered consent skips the consent page, in this browser and after a sign-in in another', async (t) => {
    const { flow, answer } = await consented(gw, 'skip', true);
    t.equal(answer.status, 302);
    t.ok(codeOf(answer));
    const again = await flow.authorize(params('skip'));
    t.equal(again.status, 302, 'no page: straight back with a code');
    const code = codeOf(again);
    t.ok(code);
    const tokens = await flow.token(
      { grant_type: 'authorization_code', code: code ?? '', redirect_uri: callbackUri, code_verifier: verifier },
      { clientId: 'skip', secret: 'secret' },
    );
    t.equal(tokens.status, 200, 'tokens issued');
    t.equal((JSON.parse(tokens.body) as { scope: string }).scope, 'openid api1');

    const other = new AuthorizeFlow(gw);
    const login = await other.authorize(params('skip'));
    const signedIn = await other.login(login, 'alice', 'alice-pw');
    t.equal(signedIn.status, 302, 'the sign-in answers with the code');
    t.ok(codeOf(signedIn));
    t.match(signedIn.headers.get('set-cookie') ?? '', 'tessera.session=', 'and starts the session');
  });

  t.test('a request for more than was remembered asks again; less does not; offline_access always asks', async (t) => {
    const { flow } = await consented(gw, 'wider', true, { scope: 'openid' });
    t.ok(isConsentPage(await flow.authorize(params('wider', { scope: 'openid api1' }))), 'a wider scope');
    t.equal((await flow.authorize(params('wider', { scope: 'openid' }))).status, 302, 'the same scope');
    const widened = await flow.authorize(params('wider', { scope: 'openid api1' }));
    t.equal((await flow.decide(widened, 'allow', { remember: 'on' })).status, 302);
    t.equal((await flow.authorize(params('wider', { scope: 'api1' }))).status, 302, 'a subset of the new decision');
    const resource = await flow.authorize(params('wider', { scope: 'openid api1', resource: 'urn:api1' }));
    t.ok(isConsentPage(resource), 'a resource (RFC 8707) not consented to');
    t.equal((await flow.decide(resource, 'allow', { remember: 'on' })).status, 302);
    t.equal(
      (await flow.authorize(params('wider', { scope: 'openid api1', resource: 'urn:api1' }))).status,
      302,
      'the resource consented to',
    );
    t.ok(isConsentPage(await flow.authorize(params('wider', { scope: 'openid api1 offline_access' }))), 'offline_access (OIDC Core §11)');
  });

  t.test('prompt=consent asks again, and a decision not remembered forgets the earlier one', async (t) => {
    const { flow } = await consented(gw, 'prompt-consent', true);
    const asked = await flow.authorize(params('prompt-consent', { prompt: 'consent' }));
    t.ok(isConsentPage(asked), 'the page despite the remembered consent');
    t.match(asked.body, 'name="remember"');
    t.equal((await flow.decide(asked, 'allow')).status, 302);
    t.ok(isConsentPage(await flow.authorize(params('prompt-consent'))), 'forgotten');
  });

  t.test('prompt=none answers with a code under a remembered consent, consent_required without one', async (t) => {
    const flow = new AuthorizeFlow(gw);
    await flow.code(params('prompt-none'));
    const before = await flow.authorize(params('prompt-none', { prompt: 'none' }));
    t.equal(errorOf(before), 'consent_required');
    const page = await flow.authorize(params('prompt-none'));
    t.equal((await flow.decide(page, 'allow', { remember: 'on' })).status, 302);
    const after = await flow.authorize(params('prompt-none', { prompt: 'none' }));
    t.equal(after.status, 302);
    t.ok(codeOf(after), after.location ?? '');
    t.equal(new URL(after.location ?? 'about:blank').searchParams.get('state'), 'st');
  });

  t.test('a remembered consent ends with its consentLifetime', async (t) => {
    const { flow } = await consented(gw, 'short', true);
    t.equal((await flow.authorize(params('short'))).status, 302, 'within the lifetime');
    await new Promise((resolve) => setTimeout(resolve, 1200));
    t.ok(isConsentPage(await flow.authorize(params('short'))), 'asked again after it');
  });

  t.test('a client without allowRememberConsent shows no checkbox and ignores a forged remember=on', async (t) => {
    const flow = new AuthorizeFlow(gw);
    const login = await flow.authorize(params('ask'));
    const page = await flow.login(login, 'alice', 'alice-pw');
    t.ok(isConsentPage(page));
    t.notMatch(page.body, 'remember');
    t.equal((await flow.decide(page, 'allow', { remember: 'on' })).status, 302);
    t.ok(isConsentPage(await flow.authorize(params('ask'))), 'asked again');
    t.equal(errorOf(await flow.authorize(params('ask', { prompt: 'none' }))), 'consent_required');
  });

  t.test('revoking on the grants page forgets the consent and ends the refresh tokens', async (t) => {
    const { flow, answer } = await consented(gw, 'revoke', true, { scope: 'openid api1 offline_access' });
    const tokens = await flow.token(
      { grant_type: 'authorization_code', code: codeOf(answer) ?? '', redirect_uri: callbackUri, code_verifier: verifier },
      { clientId: 'revoke', secret: 'secret' },
    );
    t.equal(tokens.status, 200, 'tokens issued');
    const { refresh_token: refreshToken, access_token: accessToken } = JSON.parse(tokens.body) as {
      refresh_token: string;
      access_token: string;
    };
    t.match(await flow.introspect(accessToken, 'revoke'), { active: true });
    t.equal((await flow.authorize(params('revoke'))).status, 302, 'remembered');

    const grants = await flow.browser.get(`${gw.url}/connect/grants`);
    t.equal(grants.status, 200);
    t.match(grants.body, '<h2>App revoke</h2>');
    t.match(grants.body, 'value="revoke"');
    t.equal(grants.headers.get('x-frame-options'), 'DENY');

    const forged = await flow.browser.post(`${gw.url}/connect/grants`, { client_id: 'revoke', csrf_token: 'x' });
    t.equal(forged.status, 400, 'a form without its CSRF token is refused');
    t.equal((await flow.authorize(params('revoke'))).status, 302, 'and revoked nothing');

    const revoked = await flow.browser.post(`${gw.url}/connect/grants`, { client_id: 'revoke', csrf_token: grants.hidden('csrf_token') });
    t.equal(revoked.status, 200);
    t.match(revoked.body, 'App revoke no longer has access.');
    t.notMatch(revoked.body, '<h2>App revoke</h2>');

    const refreshed = await flow.token(
      { grant_type: 'refresh_token', refresh_token: refreshToken },
      { clientId: 'revoke', secret: 'secret' },
    );
    t.equal(refreshed.status, 400);
    t.equal((JSON.parse(refreshed.body) as { error: string }).error, 'invalid_grant');
    t.same(await flow.introspect(accessToken, 'revoke'), { active: false }, 'its access token is denied');
    t.ok(isConsentPage(await flow.authorize(params('revoke'))), 'asked again');
  });

  t.test('revoking ends the refresh tokens of a device the user approved, and the device page always asks', async (t) => {
    const started = await fetch(`${gw.url}/connect/deviceauthorization`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization('tv', 'secret') },
      body: 'scope=openid%20api1%20offline_access',
    });
    const { device_code: deviceCode, user_code: userCode } = (await started.json()) as { device_code: string; user_code: string };
    const flow = new AuthorizeFlow(gw);
    const entry = await flow.browser.get(`${gw.url}/device`);
    const login = await flow.browser.post(`${gw.url}/device`, { csrf_token: entry.hidden('csrf_token'), user_code: userCode });
    const consent = await flow.browser.post(`${gw.url}/device/login`, {
      csrf_token: login.hidden('csrf_token'),
      request: login.hidden('request'),
      username: 'alice',
      password: 'alice-pw',
    });
    t.ok(isConsentPage(consent));
    t.notMatch(consent.body, 'remember', 'no checkbox on the device page');
    const done = await flow.browser.post(`${gw.url}/device/consent`, {
      csrf_token: consent.hidden('csrf_token'),
      request: consent.hidden('request'),
      decision: 'allow',
    });
    t.equal(done.status, 200);
    const tokens = await flow.token(
      { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: deviceCode },
      { clientId: 'tv', secret: 'secret' },
    );
    t.equal(tokens.status, 200, 'tokens issued');
    const { refresh_token: refreshToken } = JSON.parse(tokens.body) as { refresh_token: string };
    const grants = await flow.browser.get(`${gw.url}/connect/grants`);
    t.match(grants.body, '<h2>App tv</h2>');
    const revoked = await flow.browser.post(`${gw.url}/connect/grants`, { client_id: 'tv', csrf_token: grants.hidden('csrf_token') });
    t.match(revoked.body, 'App tv no longer has access.');
    const refreshed = await flow.token({ grant_type: 'refresh_token', refresh_token: refreshToken }, { clientId: 'tv', secret: 'secret' });
    t.equal((JSON.parse(refreshed.body) as { error: string }).error, 'invalid_grant');
  });

  t.test('the grants page needs a signed-in user', async (t) => {
    const flow = new AuthorizeFlow(gw);
    const page = await flow.browser.get(`${gw.url}/connect/grants`);
    t.equal(page.status, 200);
    t.match(page.body, 'You are not signed in');
    t.notMatch(page.body, '<form');
  });
}
