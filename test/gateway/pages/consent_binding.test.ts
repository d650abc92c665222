// Consent is bound to the consent page that was shown (issue 30; docs/security.md, "Consent is
// bound to the page that was shown"). The penetration test's attack, over HTTP: in a signed-in
// browser a request with prompt=login&max_age=0 shows the login page, and the consent form,
// put together by hand with that page's CSRF token and wider scopes, used to return a code
// without signing in.
import t from 'tap';
import { decodeJwt } from 'jose';
import { AuthorizeFlow, callbackUri, codeFlowClient, pkcePair } from '../../helpers/authorize_flow.js';
import { addPasswordFixtures, passwordFixtures } from '../../helpers/password_users.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

const fixtures = await passwordFixtures();
const gw = await startTestGateway(t, {
  patch: (raw) => {
    addPasswordFixtures(raw, fixtures);
    (raw.clients as unknown[]).push(codeFlowClient('web'));
  },
});
const { verifier, challenge } = pkcePair();
const params = (extra: Record<string, string> = {}) => ({
  client_id: 'web',
  redirect_uri: callbackUri,
  response_type: 'code',
  scope: 'openid api1',
  state: 'st',
  code_challenge: challenge,
  code_challenge_method: 'S256',
  ...extra,
});
const formExpired = 'The form has expired.';

async function signedIn(): Promise<AuthorizeFlow> {
  const flow = new AuthorizeFlow(gw);
  await flow.code(params());
  return flow;
}

t.test('a hand-made consent form cannot skip the sign-in prompt=login and max_age=0 require', async (t) => {
  const cases: Record<string, string>[] = [{ prompt: 'login' }, { max_age: '0' }, { prompt: 'login', max_age: '0' }];
  const flows = await Promise.all(cases.map(() => signedIn()));
  // auth_time has whole seconds: max_age=0 passes within the sign-in's own second.
  await new Promise((resolve) => setTimeout(resolve, 1100));
  for (const [i, extra] of cases.entries()) {
    const flow = flows[i] as AuthorizeFlow;
    const login = await flow.authorize(params(extra));
    t.match(login.body, 'name="password"', `${JSON.stringify(extra)}: the login page despite the session`);
    // The request of the login page, its scopes widened, posted to the consent form.
    const widened = new URLSearchParams(login.hidden('request'));
    widened.set('scope', 'openid api1 offline_access');
    const forms = [
      { csrf_token: login.hidden('csrf_token'), request: widened.toString(), decision: 'allow' },
      { csrf_token: login.hidden('csrf_token'), request: login.hidden('request'), decision: 'allow' },
    ];
    for (const form of forms) {
      const answer = await flow.browser.post(`${gw.url}/connect/authorize/consent`, form);
      t.equal(answer.status, 400, 'refused');
      t.equal(answer.location, null, 'no redirect, so no code');
      t.match(answer.body, formExpired);
    }
  }
});

t.test('the consent form grants no scope the page did not show; it may narrow them', async (t) => {
  const flow = await signedIn();
  const consent = await flow.authorize(params());
  t.match(consent.body, '<li>api1</li>');
  t.notMatch(consent.body, 'offline_access');
  // (An empty `scope` is an omitted one, RFC 6749 §3.1: the scopes shown.)
  for (const scope of ['openid api1 offline_access', 'openid profile', 'offline_access', 'openid api1 api1 offline_access']) {
    const answer = await flow.decide(consent, 'allow', { scope });
    t.equal(answer.status, 400, `scope "${scope}" is refused`);
    t.equal(answer.location, null);
  }
  // A `request` member beside the interaction is ignored, whatever it asks.
  const wider = new URLSearchParams(params({ scope: 'openid api1 offline_access' })).toString();
  const ignored = await flow.decide(consent, 'allow', { request: wider });
  t.equal(ignored.status, 302);
  const narrowed = await flow.decide(consent, 'allow', { scope: 'openid' });
  t.equal(narrowed.status, 302, narrowed.body);
  const code = new URL(narrowed.location ?? 'about:blank').searchParams.get('code') ?? '';
  const tokens = await flow.token(
    { grant_type: 'authorization_code', code, redirect_uri: callbackUri, code_verifier: verifier },
    { clientId: 'web', secret: 'secret' },
  );
  t.equal(tokens.status, 200, tokens.body);
  const body = JSON.parse(tokens.body) as { scope: string; refresh_token?: string; access_token: string };
  t.equal(body.scope, 'openid', 'the narrowed grant');
  t.equal(body.refresh_token, undefined);
  t.equal(decodeJwt(body.access_token).scope, 'openid');
});

t.test('a consent form shown before a fresh sign-in does not pass for the new session', async (t) => {
  const flow = await signedIn();
  const before = await flow.authorize(params());
  t.match(before.body, 'value="allow"');
  const login = await flow.authorize(params({ prompt: 'login' }));
  const after = await flow.login(login, 'alice', 'alice-pw');
  t.match(after.body, 'value="allow"');
  // The new page's CSRF token with the earlier page's interaction: another sid.
  const answer = await flow.decide(after, 'allow', { interaction: before.hidden('interaction') });
  t.equal(answer.status, 400);
  t.match(answer.body, formExpired);
  t.equal((await flow.decide(after, 'allow')).status, 302, "the new page's own form works");
});

t.test('an interaction of another browser is refused', async (t) => {
  const [alice, other] = await Promise.all([signedIn(), signedIn()]);
  const theirs = await other.authorize(params());
  const mine = await alice.authorize(params());
  const answer = await alice.decide(mine, 'allow', { interaction: theirs.hidden('interaction') });
  t.equal(answer.status, 400);
  t.equal(answer.location, null);
});
