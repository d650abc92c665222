// The authorization endpoint and its pages (gateway/pages/*; docs/endpoints.md, RFC 6749 §4.1.1-§4.1.2,
// RFC 9207, RFC 9700 §4.1, OIDC Core §3.1.2) driven over real HTTP on a real gateway: which
// mistakes get an error page and never a redirect, which get an error redirect with `state` and
// `iss`, the forms' CSRF protection, the cookies, the security headers and escaping.
import t, { type Test } from 'tap';
import { decodeJwt } from 'jose';
import { AuthorizeFlow, callbackUri, codeFlowClient, pkcePair } from '../../helpers/authorize_flow.js';
import type { PageResponse } from '../../helpers/browser_session.js';
import { addPasswordFixtures, passwordFixtures } from '../../helpers/password_users.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

const fixtures = await passwordFixtures();
const { challenge } = pkcePair();

const patch = (raw: Record<string, unknown>): void => {
  addPasswordFixtures(raw, fixtures);
  raw.throttling = { password: { maxFailures: 3, windowSeconds: 600 } };
  (raw.clients as unknown[]).push(
    codeFlowClient('web', { clientName: 'Web App' }),
    codeFlowClient('xss', { clientName: '<script>alert("name")</script>' }),
    codeFlowClient('no-pkce', { requirePkce: false }),
    // Its redirect URI carries a query of its own, which must survive the error redirect.
    codeFlowClient('with-query', { redirectUris: ['https://app.example/cb?tenant=a'] }),
    // Has a redirect URI but may not use the code flow.
    { ...codeFlowClient('ro-only'), allowedGrantTypes: ['password'], redirectUris: [callbackUri] },
    // The login page and the password grant share one throttle per user and client.
    { ...codeFlowClient('both'), allowedGrantTypes: ['authorization_code', 'password'] },
  );
};

const [gw, httpsGw] = await Promise.all([
  startTestGateway(t, { patch }),
  // An https issuer behind a plain listener (TLS ends at a proxy): cookies must be Secure.
  startTestGateway(t, {
    patch: (raw) => {
      patch(raw);
      raw.issuer = 'https://login.example';
    },
  }),
]);

const webParams = (extra: Record<string, string> = {}) => ({
  client_id: 'web',
  redirect_uri: callbackUri,
  response_type: 'code',
  scope: 'openid api1',
  state: 'st-123',
  code_challenge: challenge,
  code_challenge_method: 'S256',
  ...extra,
});

const refusedTitle = 'Sign-in request refused';
const notRegistered = 'The redirect URI is not registered for this application.';
const formExpired = 'The form has expired. Go back to the application and start again.';
const wrongCredentials = 'The username or password is incorrect.';

function assertPageHeaders(t: Test, page: PageResponse): void {
  t.equal(page.headers.get('x-frame-options'), 'DENY', 'X-Frame-Options: DENY');
  t.equal(page.headers.get('referrer-policy'), 'same-origin', 'Referrer-Policy: same-origin');
  t.equal(page.headers.get('cache-control'), 'no-store', 'Cache-Control: no-store');
}

/** An HTML error page (never a redirect) with exactly this message. */
function assertErrorPage(t: Test, page: PageResponse, status: number, message: string): void {
  t.equal(page.status, status);
  t.equal(page.location, null, 'no Location header');
  t.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
  t.match(page.body, `<p class="error" role="alert">${message.replaceAll("'", '&#39;')}</p>`);
  assertPageHeaders(t, page);
}

/** A 302 to `redirectUri` whose query is exactly `expected` (plus `iss`, RFC 9207). */
function assertRedirect(
  t: Test,
  page: PageResponse,
  redirectUri: string,
  expected: Record<string, string>,
  issuer = gw.config.issuer,
): void {
  t.equal(page.status, 302, page.body.slice(0, 300));
  t.equal(page.body, '');
  assertPageHeaders(t, page);
  const location = new URL(page.location ?? 'about:blank');
  const base = new URL(redirectUri);
  t.equal(`${location.origin}${location.pathname}`, `${base.origin}${base.pathname}`, 'to the registered redirect URI');
  t.same(Object.fromEntries(location.searchParams), { ...Object.fromEntries(base.searchParams), ...expected, iss: issuer });
  t.equal(location.hash, '');
}

const setCookies = (page: PageResponse): string[] => page.headers.getSetCookie();
const sessionCookieOf = (page: PageResponse): string | undefined => setCookies(page).find((c) => c.startsWith('tessera.session='));

t.test('an error page, never a redirect, until the redirect URI is trusted', async (t) => {
  const flow = new AuthorizeFlow(gw);
  const cases: [string, Record<string, string> | [string, string][], string][] = [
    ['an unknown client', webParams({ client_id: 'nobody' }), 'The application is unknown.'],
    [
      'a missing client_id',
      Object.fromEntries(Object.entries(webParams()).filter(([k]) => k !== 'client_id')),
      'The application is unknown.',
    ],
    ['a disabled client', webParams({ client_id: 'disabled' }), 'The application is unknown.'],
    ['a missing redirect_uri', Object.fromEntries(Object.entries(webParams()).filter(([k]) => k !== 'redirect_uri')), notRegistered],
    ['another site', webParams({ redirect_uri: 'https://evil.example' }), notRegistered],
    ['another site with the same path', webParams({ redirect_uri: 'https://evil.example/callback' }), notRegistered],
    ['userinfo pointing elsewhere', webParams({ redirect_uri: 'http://127.0.0.1:5002@evil.example/callback' }), notRegistered],
    ['a scheme-relative URI', webParams({ redirect_uri: '//evil.example/callback' }), notRegistered],
    ['the registered URI with an extra path', webParams({ redirect_uri: `${callbackUri}/evil` }), notRegistered],
    ['the registered URI with a dot segment', webParams({ redirect_uri: `${callbackUri}/../evil` }), notRegistered],
    ['the registered URI with a query', webParams({ redirect_uri: `${callbackUri}?next=https://evil.example` }), notRegistered],
    ['the registered URI with a fragment', webParams({ redirect_uri: `${callbackUri}#https://evil.example` }), notRegistered],
    ['the registered URI in other case', webParams({ redirect_uri: 'HTTP://127.0.0.1:5002/Callback' }), notRegistered],
    ['the registered URI with a trailing slash', webParams({ redirect_uri: `${callbackUri}/` }), notRegistered],
    ['the registered URI percent-encoded', webParams({ redirect_uri: 'http://127.0.0.1:5002/%63allback' }), notRegistered],
    ['the URI of another client', webParams({ redirect_uri: 'https://app.example/cb?tenant=a' }), notRegistered],
    [
      'a redirect_uri sent twice (registered first)',
      [...Object.entries(webParams()), ['redirect_uri', 'https://evil.example/callback']],
      'A parameter was sent more than once.',
    ],
    [
      'a redirect_uri sent twice (registered last)',
      [['redirect_uri', 'https://evil.example/callback'], ...Object.entries(webParams())],
      'A parameter was sent more than once.',
    ],
    ['a client_id sent twice', [...Object.entries(webParams()), ['client_id', 'web']], 'A parameter was sent more than once.'],
    // RFC 9101 §6.3: the redirect URI beside a request object is not the request's.
    ['a request object that is no JWS', webParams({ request: 'eyJhbGciOiJub25lIn0.e30.' }), 'The request object is invalid.'],
    // RFC 9126 §4: a request_uri names the request; one not pushed names nothing.
    [
      'a request_uri not pushed',
      webParams({ request_uri: 'urn:ietf:params:oauth:request_uri:abc' }),
      'The request_uri is invalid, expired or already used.',
    ],
    // Checked before response_type: an unsupported response type with a bad URI is not redirected.
    [
      'response_type=token with an unregistered URI',
      webParams({ response_type: 'token', redirect_uri: 'https://evil.example' }),
      notRegistered,
    ],
  ];
  for (const [name, params, message] of cases) {
    t.test(`refuses ${name} with a 400 page`, async (t) => {
      const page = await flow.authorize(params);
      assertErrorPage(t, page, 400, message);
      t.match(page.body, `<h1>${refusedTitle}</h1>`);
      t.notMatch(page.body, 'evil.example', 'the page does not echo the URI');
      t.equal(sessionCookieOf(page), undefined);
    });
  }

  t.test('refuses a malformed query with a 400 page', async (t) => {
    const page = await flow.browser.get(`${gw.url}/connect/authorize?client_id=web&redirect_uri=%zz`);
    assertErrorPage(t, page, 400, 'The request is malformed.');
  });
});

t.test('an error redirect with state and iss once the redirect URI is trusted', async (t) => {
  const flow = new AuthorizeFlow(gw);
  const cases: [string, Record<string, string>, Record<string, string>][] = [
    [
      'response_type=token',
      webParams({ response_type: 'token' }),
      { error: 'unsupported_response_type', error_description: 'Only response_type=code is supported.' },
    ],
    [
      'response_type=code id_token',
      webParams({ response_type: 'code id_token' }),
      { error: 'unsupported_response_type', error_description: 'Only response_type=code is supported.' },
    ],
    [
      'a missing response_type',
      Object.fromEntries(Object.entries(webParams()).filter(([k]) => k !== 'response_type')),
      { error: 'invalid_request', error_description: 'The response_type parameter is missing.' },
    ],
    [
      'a client not allowed the code flow',
      webParams({ client_id: 'ro-only' }),
      { error: 'unauthorized_client', error_description: 'The client is not allowed to use the authorization code flow.' },
    ],
    [
      'a challenge without a method (plain)',
      Object.fromEntries(Object.entries(webParams()).filter(([k]) => k !== 'code_challenge_method')),
      { error: 'invalid_request', error_description: 'The code_challenge_method must be S256.' },
    ],
    [
      'code_challenge_method=plain',
      webParams({ code_challenge_method: 'plain' }),
      { error: 'invalid_request', error_description: 'The code_challenge_method must be S256.' },
    ],
    [
      'a challenge that is too short',
      webParams({ code_challenge: challenge.slice(1) }),
      { error: 'invalid_request', error_description: 'The code_challenge is malformed.' },
    ],
    [
      'a challenge with bad characters',
      webParams({ code_challenge: `${challenge.slice(1)}+` }),
      { error: 'invalid_request', error_description: 'The code_challenge is malformed.' },
    ],
    [
      'a method without a challenge',
      Object.fromEntries(Object.entries(webParams()).filter(([k]) => k !== 'code_challenge')),
      { error: 'invalid_request', error_description: 'A code_challenge_method was sent without a code_challenge.' },
    ],
    [
      'no challenge from a client that requires PKCE',
      Object.fromEntries(Object.entries(webParams()).filter(([k]) => !k.startsWith('code_challenge'))),
      { error: 'invalid_request', error_description: 'The client must send a PKCE code_challenge.' },
    ],
    ['an unknown scope', webParams({ scope: 'openid nope' }), { error: 'invalid_scope' }],
    [
      'an unsupported prompt',
      webParams({ prompt: 'select_account' }),
      { error: 'invalid_request', error_description: 'The prompt value is not supported.' },
    ],
    [
      'response_mode=fragment',
      webParams({ response_mode: 'fragment' }),
      { error: 'invalid_request', error_description: 'Only response_mode=query is supported.' },
    ],
    [
      'prompt=none without a session',
      webParams({ prompt: 'none' }),
      { error: 'login_required', error_description: 'The user is not signed in.' },
    ],
  ];
  for (const [name, params, expected] of cases) {
    t.test(`redirects ${name} with ${expected.error}`, async (t) => {
      const page = await flow.authorize(params);
      const location = new URL(page.location ?? 'about:blank');
      // invalid_scope's description comes from the scope rules; only its presence is pinned here.
      const want: Record<string, string> = { ...expected, state: 'st-123' };
      if (want.error_description === undefined) want.error_description = location.searchParams.get('error_description') ?? '(missing)';
      assertRedirect(t, page, callbackUri, want);
    });
  }

  t.test('sends no state when the request had none', async (t) => {
    const params = Object.fromEntries(Object.entries(webParams({ response_type: 'token' })).filter(([k]) => k !== 'state'));
    assertRedirect(t, await flow.authorize(params), callbackUri, {
      error: 'unsupported_response_type',
      error_description: 'Only response_type=code is supported.',
    });
  });

  t.test('keeps the query of a registered redirect URI', async (t) => {
    const page = await flow.authorize(
      webParams({ client_id: 'with-query', redirect_uri: 'https://app.example/cb?tenant=a', response_type: 'token' }),
    );
    assertRedirect(t, page, 'https://app.example/cb?tenant=a', {
      error: 'unsupported_response_type',
      error_description: 'Only response_type=code is supported.',
      state: 'st-123',
    });
  });

  t.test('carries a state with markup through the redirect intact', async (t) => {
    const state = '"><script>alert(1)</script>&x=1';
    assertRedirect(t, await flow.authorize(webParams({ state, response_type: 'token' })), callbackUri, {
      error: 'unsupported_response_type',
      error_description: 'Only response_type=code is supported.',
      state,
    });
  });
});

t.test('the login page', async (t) => {
  t.test('is a form with username, password and a CSRF token, sent with the security headers', async (t) => {
    const flow = new AuthorizeFlow(gw);
    const page = await flow.authorize(webParams());
    t.equal(page.status, 200);
    t.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    assertPageHeaders(t, page);
    t.match(page.body, '<form method="post" action="&#x2F;connect&#x2F;authorize&#x2F;login">');
    t.match(page.body, 'name="username"');
    t.match(page.body, 'name="password" type="password"');
    t.match(page.hidden('csrf_token'), /^[\w-]{43}$/, 'an HMAC of the browser id and the session');
    t.equal(page.hidden('request'), new URL(flow.url(webParams())).search.slice(1), 'the query travels in the form');
    t.match(page.body, '<strong>Web App</strong>');
    t.notMatch(page.body, /<script/i, 'no script: works without JavaScript');
    const [csrfCookie, ...others] = setCookies(page);
    t.same(others, []);
    t.match(
      csrfCookie,
      /^tessera\.csrf=[\w-]{22}\.[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax$/,
      'HttpOnly, SameSite=Lax, not Secure on http',
    );
  });

  t.test('escapes a client name and a state with markup', async (t) => {
    const flow = new AuthorizeFlow(gw);
    const state = '"><script>alert("state")</script>';
    const page = await flow.authorize(webParams({ client_id: 'xss', state }));
    t.equal(page.status, 200);
    t.notMatch(page.body, /<script/i);
    t.match(page.body, '<strong>&lt;script&gt;alert(&quot;name&quot;)&lt;&#x2F;script&gt;</strong>');
    t.match(page.hidden('request'), new URLSearchParams({ state }).toString(), 'the state is only inside the escaped hidden field');
    const consent = await flow.login(page, 'alice', 'alice-pw');
    t.equal(consent.status, 200);
    t.notMatch(consent.body, /<script/i, 'the consent page escapes them too');
    t.match(consent.body, '&lt;script&gt;');
  });

  t.test('shows itself again with an error and sets no session after a wrong password', async (t) => {
    const flow = new AuthorizeFlow(gw);
    const page = await flow.authorize(webParams());
    const again = await flow.login(page, 'carol', 'not her password');
    t.equal(again.status, 400);
    assertPageHeaders(t, again);
    t.match(again.body, `<p class="error" role="alert">${wrongCredentials}</p>`);
    t.match(again.body, 'name="username" type="text" autocomplete="username" value="carol"', 'the username is kept');
    t.notMatch(again.body, 'not her password', 'the password is not echoed');
    t.same(setCookies(again), [], 'no cookie at all');
    t.equal(flow.browser.cookie('tessera.session'), undefined);
    const unknown = await flow.login(page, 'mallory', 'not her password');
    t.equal(unknown.status, 400);
    t.equal(unknown.body.replace('value="mallory"', 'value="carol"'), again.body, 'an unknown user gets the same page');
  });

  t.test('escapes a username with markup when it shows it again', async (t) => {
    const flow = new AuthorizeFlow(gw);
    const again = await flow.login(await flow.authorize(webParams()), '"><script>x</script>', 'pw');
    t.equal(again.status, 400);
    t.notMatch(again.body, /<script/i);
    t.match(again.body, 'value="&quot;&gt;&lt;script&gt;x&lt;&#x2F;script&gt;"');
  });

  t.test('asks for both fields when one is missing', async (t) => {
    const flow = new AuthorizeFlow(gw);
    const page = await flow.authorize(webParams());
    const answer = await flow.browser.post(`${gw.url}/connect/authorize/login`, {
      csrf_token: page.hidden('csrf_token'),
      request: page.hidden('request'),
      username: 'alice',
    });
    t.equal(answer.status, 400);
    t.match(answer.body, '<p class="error" role="alert">Enter your username and password.</p>');
    t.equal(sessionCookieOf(answer), undefined);
  });

  t.test('signs in: a consent page and a signed, HttpOnly, SameSite=Lax session cookie', async (t) => {
    const flow = new AuthorizeFlow(gw);
    const consent = await flow.login(await flow.authorize(webParams()), 'alice', 'alice-pw');
    t.equal(consent.status, 200);
    assertPageHeaders(t, consent);
    t.match(consent.body, '<form method="post" action="&#x2F;connect&#x2F;authorize&#x2F;consent">');
    t.match(consent.body, 'name="decision" value="deny"');
    t.match(consent.body, 'name="decision" value="allow"');
    t.match(consent.body, '<li>openid</li>');
    t.match(consent.body, '<li>api1</li>');
    const cookies = setCookies(consent);
    t.equal(cookies.length, 1, 'only the session cookie: the CSRF cookie is already set');
    t.match(cookies[0], /^tessera\.session=[\w-]+\.[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=36000$/);
  });

  t.test('on an https issuer, every cookie is Secure', async (t) => {
    const flow = new AuthorizeFlow(httpsGw);
    const page = await flow.authorize(webParams());
    t.equal(page.status, 200);
    // __Host-: only this host can set them, so a sibling subdomain cannot toss one in.
    t.match(setCookies(page)[0], /^__Host-tessera\.csrf=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Secure$/);
    const consent = await flow.login(page, 'alice', 'alice-pw');
    t.equal(consent.status, 200);
    t.match(
      setCookies(consent).find((c) => c.startsWith('__Host-tessera.session=')),
      /^__Host-tessera\.session=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=36000; Secure$/,
    );
    const answer = await flow.decide(consent, 'allow');
    t.equal(new URL(answer.location ?? 'about:blank').searchParams.get('iss'), 'https://login.example', 'iss is the https issuer');
  });

  t.test('answers 405 to a GET of the login form', async (t) => {
    const flow = new AuthorizeFlow(gw);
    assertErrorPage(t, await flow.browser.get(`${gw.url}/connect/authorize/login`), 405, 'This page does not accept that kind of request.');
  });

  t.test('the authorization endpoint accepts POST with the parameters in a form (OIDC Core §3.1.2.1)', async (t) => {
    const flow = new AuthorizeFlow(gw);
    const page = await flow.browser.post(`${gw.url}/connect/authorize`, webParams());
    t.equal(page.status, 200);
    t.match(page.body, 'name="password"', 'the login page, as for GET');
    const consent = await flow.login(page, 'alice', 'alice-pw');
    const answer = await flow.decide(consent, 'allow');
    t.equal(answer.status, 302);
    const response = new URL(answer.location ?? 'about:blank').searchParams;
    t.type(response.get('code'), 'string', 'a code');
    t.equal(response.get('state'), 'st-123');
    assertRedirect(t, await flow.browser.post(`${gw.url}/connect/authorize`, webParams({ prompt: 'none login' })), callbackUri, {
      error: 'invalid_request',
      error_description: 'prompt=none cannot be combined with other values.',
      state: 'st-123',
    });
  });
});

t.test('CSRF protection', async (t) => {
  // Each case: the token the forged form sends, and the CSRF cookie the browser holds then.
  type Attack = (page: PageResponse) => Promise<{ token: string | undefined; cookie?: string }>;
  const attacks: [string, Attack][] = [
    ['missing', async () => ({ token: undefined })],
    ['empty', async () => ({ token: '' })],
    ['altered', async (page) => ({ token: `${page.hidden('csrf_token').slice(0, -2)}AA` })],
    [
      "validly signed but another browser's",
      async () => ({ token: (await new AuthorizeFlow(gw).authorize(webParams())).hidden('csrf_token') }),
    ],
    ['forged, matching a forged cookie', async () => ({ token: 'forged.forged', cookie: 'forged.forged' })],
  ];

  const post = async (flow: AuthorizeFlow, path: string, form: Record<string, string>, attack: Awaited<ReturnType<Attack>>) => {
    const body = new URLSearchParams(form);
    if (attack.token !== undefined) body.set('csrf_token', attack.token);
    const cookies = [`tessera.csrf=${attack.cookie ?? flow.browser.cookie('tessera.csrf') ?? ''}`];
    const session = flow.browser.cookie('tessera.session');
    if (session !== undefined) cookies.push(`tessera.session=${session}`);
    const headers = { 'content-type': 'application/x-www-form-urlencoded', cookie: cookies.join('; ') };
    const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers, body: body.toString(), redirect: 'manual' });
    return { status: res.status, headers: res.headers, body: await res.text(), location: res.headers.get('location') };
  };

  for (const [name, attack] of attacks) {
    t.test(`a ${name} token on the login form: 400 page, no session`, async (t) => {
      const flow = new AuthorizeFlow(gw);
      const page = await flow.authorize(webParams());
      const form = { request: page.hidden('request'), username: 'alice', password: 'alice-pw' };
      const answer = await post(flow, '/connect/authorize/login', form, await attack(page));
      t.equal(answer.status, 400);
      t.equal(answer.location, null);
      t.match(answer.body, formExpired);
      t.same(
        answer.headers.getSetCookie().filter((c) => c.startsWith('tessera.session=')),
        [],
        'no session cookie',
      );
    });

    t.test(`a ${name} token on the consent form: 400 page, no code`, async (t) => {
      const flow = new AuthorizeFlow(gw);
      const consent = await flow.login(await flow.authorize(webParams()), 'alice', 'alice-pw');
      t.equal(consent.status, 200);
      const form = { interaction: consent.hidden('interaction'), decision: 'allow' };
      const answer = await post(flow, '/connect/authorize/consent', form, await attack(consent));
      t.equal(answer.status, 400);
      t.equal(answer.location, null, 'no redirect, so no code');
      t.match(answer.body, formExpired);
      t.notMatch(answer.body, 'code=');
    });
  }

  t.test('a form without its CSRF cookie: 400 page', async (t) => {
    const flow = new AuthorizeFlow(gw);
    const page = await flow.authorize(webParams());
    flow.browser.forget('tessera.csrf');
    assertErrorPage(t, await flow.login(page, 'alice', 'alice-pw'), 400, formExpired);
  });
});

t.test('the consent page', async (t) => {
  const signedIn = async () => {
    const flow = new AuthorizeFlow(gw);
    const consent = await flow.login(await flow.authorize(webParams()), 'alice', 'alice-pw');
    return { flow, consent };
  };

  t.test('allow: a redirect with exactly code, state and iss', async (t) => {
    const { flow, consent } = await signedIn();
    const answer = await flow.decide(consent, 'allow');
    const code = new URL(answer.location ?? 'about:blank').searchParams.get('code') ?? '';
    t.match(code, /^[\w-]{64}$/, '48 random bytes: at least 256 bits (docs/endpoints.md)');
    assertRedirect(t, answer, callbackUri, { code, state: 'st-123' });
  });

  t.test('deny: a redirect with access_denied, state and iss', async (t) => {
    const { flow, consent } = await signedIn();
    assertRedirect(t, await flow.decide(consent, 'deny'), callbackUri, {
      error: 'access_denied',
      error_description: 'The user denied the request.',
      state: 'st-123',
    });
  });

  t.test('no decision, or another one: 400 page', async (t) => {
    const { flow, consent } = await signedIn();
    assertErrorPage(t, await flow.decide(consent, 'maybe'), 400, 'Choose allow or deny.');
    assertErrorPage(t, await flow.decide(consent, ''), 400, 'Choose allow or deny.');
  });

  t.test('without its session: the consent form is refused, no code', async (t) => {
    const { flow, consent } = await signedIn();
    flow.browser.forget('tessera.session');
    // The form's CSRF token was made for the session: without it, the form is not this browser's.
    assertErrorPage(t, await flow.decide(consent, 'allow'), 400, formExpired);
  });

  t.test('with a tampered session cookie: no code', async (t) => {
    const { flow, consent } = await signedIn();
    const session = flow.browser.cookie('tessera.session') ?? '';
    const [payload, mac] = session.split('.') as [string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    const forged = Buffer.from(JSON.stringify({ ...claims, sub: 'sub-carol' })).toString('base64url');
    const headers = {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: `tessera.csrf=${flow.browser.cookie('tessera.csrf') ?? ''}; tessera.session=${forged}.${mac}`,
    };
    const body = new URLSearchParams({
      csrf_token: consent.hidden('csrf_token'),
      interaction: consent.hidden('interaction'),
      decision: 'allow',
    });
    const res = await fetch(`${gw.url}/connect/authorize/consent`, { method: 'POST', headers, body: body.toString(), redirect: 'manual' });
    t.equal(res.status, 400, 'an unreadable session is no session: the token made for the real one fails');
    t.equal(res.headers.get('location'), null);
    t.match(await res.text(), formExpired);
  });

  t.test('the request travels signed: a tampered redirect_uri in the interaction gets the error page, no code', async (t) => {
    const { flow, consent } = await signedIn();
    const [payload, mac] = consent.hidden('interaction').split('.') as [string, string];
    const shown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { query: string };
    const query = shown.query.replace(encodeURIComponent(callbackUri), encodeURIComponent('https://evil.example/callback'));
    t.not(query, shown.query);
    const forged = `${Buffer.from(JSON.stringify({ ...shown, query })).toString('base64url')}.${mac}`;
    assertErrorPage(t, await flow.decide(consent, 'allow', { interaction: forged }), 400, formExpired);
    // The request is validated again anyway; the untampered form still works.
    t.equal((await flow.decide(consent, 'allow')).status, 302);
  });
});

t.test('single sign-on and prompt', async (t) => {
  const flow = new AuthorizeFlow(gw);
  await flow.code(webParams());

  t.test('a signed-in user goes straight to the consent page', async (t) => {
    const page = await flow.authorize(webParams());
    t.equal(page.status, 200);
    t.match(page.body, 'value="allow"');
    t.notMatch(page.body, 'name="password"');
  });

  t.test('prompt=login shows the login page again despite the session', async (t) => {
    const page = await flow.authorize(webParams({ prompt: 'login' }));
    t.equal(page.status, 200);
    t.match(page.body, 'name="password"');
    const consent = await flow.login(page, 'alice', 'alice-pw');
    t.equal(consent.status, 200);
    t.ok(sessionCookieOf(consent), 'a new session');
    const answer = await flow.decide(consent, 'allow');
    t.equal(answer.status, 302);
    t.type(new URL(answer.location ?? 'about:blank').searchParams.get('code'), 'string');
  });

  t.test('prompt=none with a session shows no page: consent_required (consent is not remembered)', async (t) => {
    assertRedirect(t, await flow.authorize(webParams({ prompt: 'none' })), callbackUri, {
      error: 'consent_required',
      error_description: 'The user has not consented to this request.',
      state: 'st-123',
    });
  });

  t.test('max_age: an older sign-in signs in again, and the ID token carries the new auth_time', async (t) => {
    const { verifier, challenge: fresh } = pkcePair();
    const redeem = async (code: string | null): Promise<number> => {
      const answer = await flow.token(
        { grant_type: 'authorization_code', code: code ?? '', redirect_uri: callbackUri, code_verifier: verifier },
        { clientId: 'web', secret: 'secret' },
      );
      t.equal(answer.status, 200, answer.body);
      return decodeJwt((JSON.parse(answer.body) as { id_token: string }).id_token).auth_time as number;
    };
    const first = await redeem((await flow.code(webParams({ code_challenge: fresh }))).get('code'));
    // auth_time has whole seconds: let the session age by more than one.
    await new Promise((resolve) => setTimeout(resolve, 2100));

    t.match((await flow.authorize(webParams({ max_age: '3600' }))).body, 'value="allow"', 'a recent enough sign-in is kept');
    assertRedirect(t, await flow.authorize(webParams({ max_age: '1', prompt: 'none' })), callbackUri, {
      error: 'login_required',
      error_description: 'The user is not signed in.',
      state: 'st-123',
    });
    const page = await flow.authorize(webParams({ max_age: '0', code_challenge: fresh }));
    t.match(page.body, 'name="password"', 'max_age=0: the login page despite the session');
    const consent = await flow.login(page, 'alice', 'alice-pw');
    t.match(consent.body, 'value="allow"', 'the fresh sign-in passes max_age on the consent form');
    const answer = await flow.decide(consent, 'allow');
    const second = await redeem(new URL(answer.location ?? 'about:blank').searchParams.get('code'));
    t.ok(second >= first + 2, `the ID token's auth_time is the new sign-in's (${second} after ${first})`);
  });

  t.test('a max_age that is not a non-negative integer is invalid_request', async (t) => {
    // An empty max_age is an omitted one (RFC 6749 §3.1), so not listed here.
    for (const maxAge of ['-1', 'ten', '1.5', '1e3']) {
      assertRedirect(t, await flow.authorize(webParams({ max_age: maxAge })), callbackUri, {
        error: 'invalid_request',
        error_description: 'The max_age parameter must be a non-negative integer.',
        state: 'st-123',
      });
    }
  });

  t.test('prompt=none cannot be combined', async (t) => {
    assertRedirect(t, await flow.authorize(webParams({ prompt: 'none login' })), callbackUri, {
      error: 'invalid_request',
      error_description: 'prompt=none cannot be combined with other values.',
      state: 'st-123',
    });
  });
});

t.test('the login throttle is the password grant’s', async (t) => {
  const flow = new AuthorizeFlow(gw);
  const params = webParams({ client_id: 'both' });
  const page = await flow.authorize(params);
  // maxFailures is 3: two failures on the page and one at the token endpoint reach it.
  for (let i = 0; i < 2; i++) t.equal((await flow.login(page, 'alice', 'wrong')).status, 400);
  const grant = await flow.token(
    { grant_type: 'password', username: 'alice', password: 'wrong', scope: 'api1' },
    { clientId: 'both', secret: 'secret' },
  );
  t.equal(grant.status, 400, 'the attempt that reaches the limit is still a wrong password');
  const blocked = await flow.login(page, 'alice', 'alice-pw');
  t.equal(blocked.status, 429, 'the right password is refused too');
  assertPageHeaders(t, blocked);
  const retryAfter = Number(blocked.headers.get('retry-after'));
  t.ok(
    Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 600,
    `Retry-After within the 600 s window (${blocked.headers.get('retry-after')})`,
  );
  t.match(blocked.body, '<p class="error" role="alert">Too many failed attempts. Try again later.</p>');
  t.equal(sessionCookieOf(blocked), undefined);
  const viaGrant = await flow.token(
    { grant_type: 'password', username: 'alice', password: 'alice-pw', scope: 'api1' },
    { clientId: 'both', secret: 'secret' },
  );
  t.equal(viaGrant.status, 429);
  t.same(JSON.parse(viaGrant.body), { error: 'temporarily_unavailable', error_description: 'Too many failed attempts. Retry later.' });
  const otherClient = await new AuthorizeFlow(gw).code(webParams());
  t.type(otherClient.get('code'), 'string', 'the same user at another client is not locked out');
});

t.test('discovery announces the authorization endpoint', async (t) => {
  const res = await fetch(`${gw.url}/.well-known/openid-configuration`);
  t.equal(res.status, 200);
  const doc = (await res.json()) as Record<string, unknown>;
  t.equal(doc.authorization_endpoint, `${gw.config.issuer}/connect/authorize`);
  t.same(doc.response_types_supported, ['code']);
  t.same(doc.response_modes_supported, ['query']);
  t.equal(doc.authorization_response_iss_parameter_supported, true);
  t.same(doc.subject_types_supported, ['public']);
  t.same(doc.code_challenge_methods_supported, ['S256']);
  t.ok((doc.grant_types_supported as string[]).includes('authorization_code'));
  const claims = doc.claims_supported as string[];
  for (const claim of ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'at_hash', 'sid', 'name'])
    t.ok(claims.includes(claim), claim);
  t.equal(new Set(claims).size, claims.length, 'no duplicates');
});
