// The device verification page (gateway/pages/device_endpoint.ts, RFC 8628 §3.3): entering the
// user code, signing in, allowing or denying, over real HTTP on the memory store and on a private
// redis-server. Every request leaves from its own loopback address (127.x.y.z) so that the
// per-address throttle of one rule never leaks into another, and the throttle itself can be shown
// to count per address and per browser separately.
import t, { type Test } from 'tap';
import { request as httpRequest } from 'node:http';
import { PageResponse } from '../../helpers/browser_session.js';
import { addPasswordFixtures, passwordFixtures } from '../../helpers/password_users.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { releaseAtOnce } from '../../helpers/release_at_once.js';
import { startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';

const deviceGrant = 'urn:ietf:params:oauth:grant-type:device_code';
const maxWrongCodes = 3;
const invalidCode = 'That code is not valid or has expired. Check the code on your device.';
const formExpired = 'The form has expired. Enter the code again.';
const tooManyCodes = 'Too many wrong codes. Try again later.';
const fixtures = await passwordFixtures();

function patchFor(store: Record<string, unknown>) {
  return (raw: Record<string, unknown>) => {
    addPasswordFixtures(raw, fixtures);
    raw.store = store;
    raw.throttling = { userCode: { maxFailures: maxWrongCodes, windowSeconds: 60 } };
    (raw.clients as unknown[]).push(
      {
        clientId: 'tv',
        clientName: 'Living-room TV',
        requireClientSecret: false,
        allowedGrantTypes: [deviceGrant, 'refresh_token'],
        allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
        allowOfflineAccess: true,
        pollingInterval: 1,
      },
      {
        clientId: 'tv-short',
        requireClientSecret: false,
        allowedGrantTypes: [deviceGrant],
        allowedScopes: ['api1'],
        deviceCodeLifetime: 1,
        pollingInterval: 1,
      },
    );
  };
}

/**
 * A cookie-keeping browser bound to one local address, on node:http (fetch cannot choose its
 * source address). Follows nothing: every status is the test's to see.
 */
class Browser {
  private readonly cookies = new Map<string, string>();

  constructor(readonly address: string) {}

  get(url: string): Promise<PageResponse> {
    return this.send('GET', url);
  }

  post(url: string, form: Record<string, string>): Promise<PageResponse> {
    return this.send('POST', url, new URLSearchParams(form).toString());
  }

  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  setCookie(name: string, value: string): void {
    this.cookies.set(name, value);
  }

  get cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  private send(method: string, url: string, body?: string): Promise<PageResponse> {
    const target = new URL(url);
    const headers: Record<string, string> = {};
    if (this.cookies.size > 0) headers.cookie = this.cookieHeader;
    if (body !== undefined) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          path: `${target.pathname}${target.search}`,
          method,
          headers,
          localAddress: this.address,
          agent: false,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', reject);
          res.on('end', () => {
            const received = new Headers();
            for (const [name, value] of Object.entries(res.headers)) {
              for (const v of Array.isArray(value) ? value : [value ?? '']) received.append(name, v);
            }
            for (const line of res.headers['set-cookie'] ?? []) {
              const pair = line.split(';')[0] ?? '';
              const eq = pair.indexOf('=');
              if (eq > 0) this.cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
            }
            resolve(new PageResponse(res.statusCode ?? 0, received, Buffer.concat(chunks).toString('utf8')));
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }
}

interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
}

interface Poll {
  status: number;
  body: Record<string, unknown>;
}

/** RFC 6585 §4: a 429 says when to come back, within the throttle's 60 s window. */
function assertRetryAfter(t: Test, page: PageResponse, label: string): void {
  const value = page.headers.get('retry-after');
  const seconds = Number(value);
  t.ok(Number.isInteger(seconds) && seconds >= 1 && seconds <= 60, `Retry-After on ${label} (${value})`);
}

function assertPageHeaders(t: Test, page: PageResponse, label: string): void {
  t.equal(page.headers.get('x-frame-options'), 'DENY', `X-Frame-Options on ${label}`);
  t.equal(page.headers.get('referrer-policy'), 'same-origin', `Referrer-Policy on ${label}`);
  t.equal(page.headers.get('cache-control'), 'no-store', `Cache-Control on ${label}`);
  t.match(page.headers.get('content-type'), /^text\/html; charset=utf-8$/, `an HTML page: ${label}`);
}

/** The code the entry form shows in its input. */
function prefilled(page: PageResponse): string | undefined {
  const match = /id="user_code"[^>]*value="([^"]*)"/.exec(page.body);
  return match?.[1];
}

/** The error paragraph of a page, or undefined. */
function errorMessage(page: PageResponse): string | undefined {
  return /<p class="error" role="alert">([^<]*)<\/p>/.exec(page.body)?.[1];
}

// Mustache escapes "/" in attribute values too.
const isEntryPage = (page: PageResponse) => page.body.includes('<h1>Connect a device</h1>') && page.body.includes('action="&#x2F;device"');
const isLoginPage = (page: PageResponse) =>
  page.body.includes('<h1>Sign in</h1>') && page.body.includes('action="&#x2F;device&#x2F;login"');
const isConsentPage = (page: PageResponse) =>
  page.body.includes('<h1>Allow access?</h1>') && page.body.includes('action="&#x2F;device&#x2F;consent"');

function pageRules(t: Test, gw: TestGateway, addressPrefix: string): void {
  let lastHost = 0;
  /** A browser on a loopback address no other rule uses. */
  const newBrowser = (): Browser => new Browser(`${addressPrefix}.${++lastHost}`);

  async function authorize(clientId = 'tv', scope = 'openid profile api1 offline_access'): Promise<DeviceAuthorization> {
    const res = await fetch(`${gw.url}/connect/deviceauthorization`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: clientId, scope }).toString(),
    });
    if (res.status !== 200) throw new Error(`device authorization failed: ${await res.text()}`);
    return (await res.json()) as DeviceAuthorization;
  }

  async function poll(device: DeviceAuthorization, clientId = 'tv'): Promise<Poll> {
    const res = await fetch(gw.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: deviceGrant, client_id: clientId, device_code: device.device_code }).toString(),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  /** Types the code on a fresh entry form. */
  async function enter(browser: Browser, userCode: string): Promise<PageResponse> {
    const entry = await browser.get(`${gw.url}/device`);
    return browser.post(`${gw.url}/device`, { csrf_token: entry.hidden('csrf_token'), user_code: userCode });
  }

  async function signIn(browser: Browser, login: PageResponse, password = 'alice-pw', username = 'alice'): Promise<PageResponse> {
    return browser.post(`${gw.url}/device/login`, {
      csrf_token: login.hidden('csrf_token'),
      request: login.hidden('request'),
      username,
      password,
    });
  }

  async function decide(browser: Browser, consent: PageResponse, decision: string): Promise<PageResponse> {
    return browser.post(`${gw.url}/device/consent`, {
      csrf_token: consent.hidden('csrf_token'),
      request: consent.hidden('request'),
      decision,
    });
  }

  /** Code, sign-in (unless the browser has a session), consent; resolves the consent form. */
  async function reachConsent(browser: Browser, userCode: string): Promise<PageResponse> {
    const page = await enter(browser, userCode);
    if (isConsentPage(page)) return page;
    if (!isLoginPage(page)) throw new Error(`expected the sign-in page, got ${page.status}:\n${page.body.slice(0, 600)}`);
    const consent = await signIn(browser, page);
    if (!isConsentPage(consent)) throw new Error(`expected the consent page, got ${consent.status}`);
    return consent;
  }

  t.test('the entry page is a form with a signed CSRF token in a hidden input and an HttpOnly cookie', async (t) => {
    const browser = newBrowser();
    const entry = await browser.get(`${gw.url}/device`);
    t.equal(entry.status, 200);
    assertPageHeaders(t, entry, 'the entry page');
    t.ok(isEntryPage(entry));
    t.equal(prefilled(entry), '', 'no code yet');
    t.equal(errorMessage(entry), undefined);
    t.match(entry.hidden('csrf_token'), /^[\w-]{43}$/, "the form's token: an HMAC of the browser id and the session");
    t.not(entry.hidden('csrf_token'), browser.cookie('tessera.csrf'), 'not the cookie itself: a tossed cookie gives no usable token');
    t.match(entry.headers.get('set-cookie'), /^tessera\.csrf=[^;]+; Path=\/; HttpOnly; SameSite=Lax$/);
    const again = await browser.get(`${gw.url}/device`);
    t.equal(again.hidden('csrf_token'), entry.hidden('csrf_token'), 'one token per browser');
    t.equal(again.headers.get('set-cookie'), null, 'the cookie is not set twice');
  });

  t.test('the code is accepted whatever its case, dashes and spaces', async (t) => {
    const device = await authorize();
    const plain = device.user_code.replace('-', '');
    const variants = [
      device.user_code,
      device.user_code.toLowerCase(),
      plain,
      plain.toLowerCase(),
      ` ${device.user_code.slice(0, 2)} ${device.user_code.slice(2).toLowerCase()} `,
      `${plain.slice(0, 4)} - ${plain.slice(4)}`,
      `${plain.slice(0, 4)}--${plain.slice(4)}`,
      `\t${plain.slice(0, 4)}\n${plain.slice(4)}`,
    ];
    // Each variant from its own browser and address: they are right codes, but the point is not the throttle.
    for (const typed of variants) {
      const login = await enter(newBrowser(), typed);
      t.equal(login.status, 200, JSON.stringify(typed));
      t.ok(isLoginPage(login), `sign-in page for ${JSON.stringify(typed)}`);
      t.equal(login.hidden('request'), plain, 'the form carries the normalised code');
      t.match(login.body, /to continue to <strong>Living-room TV<\/strong>/);
      assertPageHeaders(t, login, 'the sign-in page');
    }
    t.same(await poll(device), {
      status: 400,
      body: { error: 'authorization_pending', error_description: 'The user has not finished yet.' },
    });
  });

  t.test('verification_uri_complete opens the entry form with the code filled in, for the user to confirm', async (t) => {
    const device = await authorize();
    t.equal(new URL(device.verification_uri_complete).origin, new URL(gw.url).origin);
    const browser = newBrowser();
    const page = await browser.get(device.verification_uri_complete.replace(new URL(device.verification_uri_complete).origin, gw.url));
    t.equal(page.status, 200);
    assertPageHeaders(t, page, 'the prefilled entry page');
    t.ok(isEntryPage(page), 'the entry form, not a sign-in: RFC 8628 §3.3.1 has the user compare the code with the device');
    t.equal(prefilled(page), device.user_code);
    t.equal(errorMessage(page), undefined);
    const login = await browser.post(`${gw.url}/device`, { csrf_token: page.hidden('csrf_token'), user_code: prefilled(page) as string });
    t.ok(isLoginPage(login));
    t.equal(login.hidden('request'), device.user_code.replace('-', ''));
  });

  t.test('a wrong code reveals nothing: unknown, malformed, expired and used codes get the same page', async (t) => {
    const [short, used] = await Promise.all([authorize('tv-short', 'api1'), authorize()]);
    const approving = (async () => {
      const browser = newBrowser();
      const done = await decide(browser, await reachConsent(browser, used.user_code), 'allow');
      t.equal(done.status, 200);
    })();
    await Promise.all([approving, new Promise((resolve) => setTimeout(resolve, 1100))]);

    const pages = new Map<string, PageResponse>();
    const cases: [string, string][] = [
      ['unknown', 'BBBB-BBBB'],
      ['malformed', 'HELLO'],
      ['vowels', 'AAAA-AAAA'],
      ['too long', `${used.user_code}B`],
      ['expired', short.user_code],
      ['used', used.user_code],
      ['empty', ''],
    ];
    for (const [label, code] of cases) {
      const browser = newBrowser();
      const page = await enter(browser, code);
      t.equal(page.status, 400, label);
      assertPageHeaders(t, page, `the ${label} code page`);
      t.ok(isEntryPage(page), `${label}: the entry page again`);
      t.equal(errorMessage(page), invalidCode, `${label}: the one message`);
      t.equal(prefilled(page), code, `${label}: the typed code stays for correction`);
      // Only the browser's own CSRF token and the echoed input differ.
      pages.set(
        label,
        new PageResponse(
          page.status,
          page.headers,
          page.body.replace(page.hidden('csrf_token'), 'CSRF').replace(`value="${code}"`, 'value="CODE"'),
        ),
      );
    }
    const reference = pages.get('unknown')?.body;
    for (const [label, page] of pages) t.equal(page.body, reference, `${label} is indistinguishable from unknown`);
    t.same(await poll(short, 'tv-short'), {
      status: 400,
      body: { error: 'expired_token', error_description: 'The device code has expired.' },
    });
  });

  t.test('wrong codes are throttled per source address and per browser: then 429, even for a right code', async (t) => {
    const device = await authorize();
    const x = newBrowser();
    for (let i = 1; i <= maxWrongCodes; i++) {
      const page = await enter(x, 'BBBB-BBBB');
      t.equal(page.status, 400, `wrong code ${i}`);
    }
    const blocked = await enter(x, device.user_code);
    t.equal(blocked.status, 429, 'blocked after the limit, even with the right code');
    assertPageHeaders(t, blocked, 'the 429 page');
    assertRetryAfter(t, blocked, 'the 429 page');
    t.ok(isEntryPage(blocked));
    t.equal(errorMessage(blocked), tooManyCodes);
    t.notOk(blocked.body.includes(device.user_code), 'nothing of the code is echoed on the 429 page');

    // The same browser from another address: still blocked (per browser).
    const movedX = new Browser(newBrowser().address);
    movedX.setCookie('tessera.csrf', x.cookie('tessera.csrf') as string);
    const moved = await enter(movedX, device.user_code);
    t.equal(moved.status, 429, 'the browser is blocked wherever it comes from');
    t.equal(errorMessage(moved), tooManyCodes);

    // Another browser from the first address: blocked too (per address).
    const y = new Browser(x.address);
    const sameAddress = await enter(y, device.user_code);
    t.equal(sameAddress.status, 429, 'a fresh browser on the blocked address is blocked');
    t.equal(errorMessage(sameAddress), tooManyCodes);
    const metrics = await (await fetch(`${gw.managementUrl}/metrics`)).text();
    t.ok(
      Number(/^tessera_throttle_hits_total\{throttle="user_code"\} (\d+)$/m.exec(metrics)?.[1]) >= 3,
      'each refusal counts as a throttle hit',
    );

    // Anyone else is served.
    const z = newBrowser();
    const login = await enter(z, device.user_code);
    t.equal(login.status, 200);
    t.ok(isLoginPage(login));
    // The entry page itself stays reachable on a blocked address (it reveals nothing).
    t.equal((await y.get(`${gw.url}/device`)).status, 200);
  });

  t.test('guessing codes through the sign-in and consent forms counts against the same throttle', async (t) => {
    const device = await authorize();
    const viaLogin = newBrowser();
    const entry = await viaLogin.get(`${gw.url}/device`);
    const csrf = entry.hidden('csrf_token');
    for (let i = 1; i <= maxWrongCodes; i++) {
      const page = await viaLogin.post(`${gw.url}/device/login`, {
        csrf_token: csrf,
        request: `BBBBBBB${'CDF'[i - 1] ?? 'G'}`,
        username: 'alice',
        password: 'alice-pw',
      });
      t.equal(page.status, 400, `guess ${i} through /device/login`);
      t.equal(errorMessage(page), invalidCode);
    }
    const blocked = await viaLogin.post(`${gw.url}/device/login`, {
      csrf_token: csrf,
      request: device.user_code.replace('-', ''),
      username: 'alice',
      password: 'alice-pw',
    });
    t.equal(blocked.status, 429, 'the sign-in form is no way around the code throttle');
    assertRetryAfter(t, blocked, 'the sign-in form’s 429');
    t.equal(errorMessage(blocked), tooManyCodes);
    t.equal(viaLogin.cookie('tessera.session'), undefined, 'no sign-in happened');
    t.equal((await enter(viaLogin, device.user_code)).status, 429, 'and the entry form is blocked as well');

    // Through the consent form, with a session from an earlier sign-in.
    const viaConsent = newBrowser();
    const consent = await reachConsent(viaConsent, device.user_code);
    for (let i = 1; i <= maxWrongCodes; i++) {
      const page = await viaConsent.post(`${gw.url}/device/consent`, {
        csrf_token: consent.hidden('csrf_token'),
        request: `CCCCCCC${'BDF'[i - 1] ?? 'G'}`,
        decision: 'allow',
      });
      t.equal(page.status, 400, `guess ${i} through /device/consent`);
      t.equal(errorMessage(page), invalidCode);
    }
    const late = await decide(viaConsent, consent, 'allow');
    t.equal(late.status, 429, 'the consent form is no way around the code throttle');
    assertRetryAfter(t, late, 'the consent form’s 429');
    t.same(await poll(device), {
      status: 400,
      body: { error: 'authorization_pending', error_description: 'The user has not finished yet.' },
    });
  });

  t.test('without the right CSRF token nothing happens', async (t) => {
    const device = await authorize();
    const browser = newBrowser();
    const entry = await browser.get(`${gw.url}/device`);
    const other = newBrowser();
    const otherToken = (await other.get(`${gw.url}/device`)).hidden('csrf_token');

    for (const [label, form] of [
      ['missing', { user_code: device.user_code }],
      ["another browser's", { user_code: device.user_code, csrf_token: otherToken }],
      ['tampered', { user_code: device.user_code, csrf_token: `${entry.hidden('csrf_token')}x` }],
    ] as const) {
      const page = await browser.post(`${gw.url}/device`, form);
      t.equal(page.status, 400, `${label} token on the entry form`);
      assertPageHeaders(t, page, 'the expired form page');
      t.ok(isEntryPage(page));
      t.equal(errorMessage(page), formExpired);
      t.notOk(page.body.includes(device.user_code), 'the code is not looked up');
    }
    // A cookie we did not sign, submitted twice (cookie and form) as a forger could.
    const forger = newBrowser();
    forger.setCookie('tessera.csrf', 'forged.token');
    const forged = await forger.post(`${gw.url}/device`, { user_code: device.user_code, csrf_token: 'forged.token' });
    t.equal(forged.status, 400);
    t.equal(errorMessage(forged), formExpired);

    // Sign-in without the token: no session, even with the right password.
    const login = await enter(browser, device.user_code);
    const noLogin = await browser.post(`${gw.url}/device/login`, {
      request: login.hidden('request'),
      username: 'alice',
      password: 'alice-pw',
    });
    t.equal(noLogin.status, 400);
    t.equal(errorMessage(noLogin), formExpired);
    t.equal(browser.cookie('tessera.session'), undefined);
    const wrongLogin = await browser.post(`${gw.url}/device/login`, {
      csrf_token: otherToken,
      request: login.hidden('request'),
      username: 'alice',
      password: 'alice-pw',
    });
    t.equal(wrongLogin.status, 400);
    t.equal(browser.cookie('tessera.session'), undefined);

    // Consent without the token: the device stays pending.
    const consent = await signIn(browser, login);
    t.ok(isConsentPage(consent));
    const forms: Record<string, string>[] = [
      { request: consent.hidden('request'), decision: 'allow' },
      { csrf_token: otherToken, request: consent.hidden('request'), decision: 'allow' },
      { csrf_token: otherToken, request: consent.hidden('request'), decision: 'deny' },
    ];
    for (const form of forms) {
      const page = await browser.post(`${gw.url}/device/consent`, form);
      t.equal(page.status, 400);
      t.equal(errorMessage(page), formExpired);
    }
    t.same(await poll(device), {
      status: 400,
      body: { error: 'authorization_pending', error_description: 'The user has not finished yet.' },
    });
    // The form itself still works.
    t.equal((await decide(browser, consent, 'allow')).status, 200);
  });

  t.test('a wrong password shows the sign-in page again with an error, and no session', async (t) => {
    const device = await authorize();
    const browser = newBrowser();
    const login = await enter(browser, device.user_code);
    for (const [username, password] of [
      ['alice', 'wrong'],
      ['nobody', 'alice-pw'],
    ] as const) {
      const again = await signIn(browser, login, password, username);
      t.equal(again.status, 400, `${username}/${password}`);
      assertPageHeaders(t, again, 'the sign-in page with an error');
      t.ok(isLoginPage(again));
      t.equal(errorMessage(again), 'The username or password is incorrect.', 'one message whether the user exists or not');
      t.match(again.body, new RegExp(`name="username" type="text" autocomplete="username" value="${username}"`), 'the username stays');
      t.notOk(again.body.includes(password), 'the password is never echoed');
      t.equal(again.hidden('request'), login.hidden('request'), 'the code rides along');
      t.equal(browser.cookie('tessera.session'), undefined);
    }
    const missing = await browser.post(`${gw.url}/device/login`, {
      csrf_token: login.hidden('csrf_token'),
      request: login.hidden('request'),
      username: 'alice',
    });
    t.equal(missing.status, 400);
    t.equal(errorMessage(missing), 'Enter your username and password.');
    const consent = await signIn(browser, login);
    t.equal(consent.status, 200);
    t.ok(isConsentPage(consent));
    t.type(browser.cookie('tessera.session'), 'string');
    t.same(await poll(device), {
      status: 400,
      body: { error: 'authorization_pending', error_description: 'The user has not finished yet.' },
    });
  });

  t.test('the consent page names the client and the scopes; a signed-in browser goes straight to it', async (t) => {
    const [first, second] = await Promise.all([authorize(), authorize('tv', 'api1')]);
    const browser = newBrowser();
    const consent = await reachConsent(browser, first.user_code);
    assertPageHeaders(t, consent, 'the consent page');
    t.match(consent.body, /<strong>Living-room TV<\/strong> asks to access your account/);
    const scopes = [...consent.body.matchAll(/<li>([^<]*)<\/li>/g)].map((m) => m[1]);
    t.same(scopes, ['openid', 'profile', 'api1', 'Stay connected when you are not using the device (offline access)']);
    t.match(consent.body, /name="decision" value="deny"/);
    t.match(consent.body, /name="decision" value="allow"/);
    const direct = await enter(browser, second.user_code);
    t.equal(direct.status, 200);
    t.ok(isConsentPage(direct), 'single sign-on: no second sign-in');
    t.equal(direct.hidden('request'), second.user_code.replace('-', ''));
  });

  t.test('allow connects the device: its next poll gets the tokens', async (t) => {
    const device = await authorize();
    const browser = newBrowser();
    const done = await decide(browser, await reachConsent(browser, device.user_code), 'allow');
    t.equal(done.status, 200);
    assertPageHeaders(t, done, 'the done page');
    t.match(done.body, /<h1>Device connected<\/h1>/);
    t.match(done.body, /Living-room TV is now connected\. You can return to your device\./);
    const tokens = await poll(device);
    t.equal(tokens.status, 200);
    t.equal(tokens.body.scope, 'openid profile api1 offline_access');
    t.type(tokens.body.id_token, 'string');
    t.type(tokens.body.refresh_token, 'string');
  });

  t.test('deny: the device gets access_denied', async (t) => {
    const device = await authorize();
    const browser = newBrowser();
    const done = await decide(browser, await reachConsent(browser, device.user_code), 'deny');
    t.equal(done.status, 200);
    t.match(done.body, /<h1>Access denied<\/h1>/);
    t.match(done.body, /Living-room TV was not given access\./);
    t.same(await poll(device), { status: 400, body: { error: 'access_denied', error_description: 'The user denied the request.' } });
    t.same(await poll(device), { status: 400, body: { error: 'access_denied', error_description: 'The user denied the request.' } });
  });

  t.test('a decision other than allow or deny changes nothing', async (t) => {
    const device = await authorize();
    const browser = newBrowser();
    const consent = await reachConsent(browser, device.user_code);
    const page = await decide(browser, consent, 'maybe');
    t.equal(page.status, 400);
    assertPageHeaders(t, page, 'the error page');
    t.equal(errorMessage(page), 'Choose allow or deny.');
    t.same(await poll(device), {
      status: 400,
      body: { error: 'authorization_pending', error_description: 'The user has not finished yet.' },
    });
  });

  t.test('a used code cannot be decided twice', async (t) => {
    const device = await authorize();
    const browser = newBrowser();
    const consent = await reachConsent(browser, device.user_code);
    t.equal((await decide(browser, consent, 'allow')).status, 200);
    for (const decision of ['allow', 'deny']) {
      const again = await decide(browser, consent, decision);
      t.equal(again.status, 400, `${decision} after allow`);
      t.ok(isEntryPage(again));
      t.equal(errorMessage(again), invalidCode);
    }
    const reentered = await enter(browser, device.user_code);
    t.equal(reentered.status, 400);
    t.equal(errorMessage(reentered), invalidCode);
    const tokens = await poll(device);
    t.equal(tokens.status, 200, 'a late deny did not overturn the approval');
  });

  t.test('of 20 consent submissions released at once exactly one decides', async (t) => {
    const device = await authorize();
    const browser = newBrowser();
    const consent = await reachConsent(browser, device.user_code);
    const body = new URLSearchParams({
      csrf_token: consent.hidden('csrf_token'),
      request: consent.hidden('request'),
      decision: 'allow',
    }).toString();
    const request = Buffer.from(
      `POST /device/consent HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${browser.cookieHeader}\r\n` +
        `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    const answers = await releaseAtOnce(
      Array.from({ length: 20 }, () => gw.port),
      request,
    );
    const won = answers.filter((a) => a.status === 200);
    t.equal(won.length, 1, `statuses: ${answers.map((a) => a.status).join(' ')}`);
    t.match(won[0]?.body, /is now connected/);
    // The others find the code used. Those that looked it up after the winner claimed it count as
    // wrong codes for this browser and address (they cannot be told from a guess), so past
    // maxFailures the throttle answers the rest: 400 or 429, never a second decision.
    const lost = answers.filter((a) => a !== won[0]);
    t.equal(lost.length, 19);
    for (const answer of lost) {
      t.ok(
        (answer.status === 400 && answer.body.includes(invalidCode)) || (answer.status === 429 && answer.body.includes(tooManyCodes)),
        `a losing submission gets the entry page (${answer.status})`,
      );
    }
    t.equal((await poll(device)).status, 200);
    t.same(await poll(device), {
      status: 400,
      body: { error: 'invalid_grant', error_description: 'The device code is invalid or already used.' },
    });
  });

  t.test('user input is escaped, never markup', async (t) => {
    const script = '<script>alert(1)</script>';
    const escaped = '&lt;script&gt;alert(1)&lt;&#x2F;script&gt;';
    const typed = await enter(newBrowser(), script);
    t.equal(typed.status, 400);
    t.notOk(typed.body.includes('<script>'), 'no script element in the page');
    t.equal(prefilled(typed), escaped);
    const viaLink = await newBrowser().get(`${gw.url}/device?user_code=${encodeURIComponent(`"><img src=x onerror=alert(1)>${script}`)}`);
    t.equal(viaLink.status, 200);
    t.notOk(viaLink.body.includes('<script>'));
    t.notOk(viaLink.body.includes('<img'));
    t.equal(prefilled(viaLink), `&quot;&gt;&lt;img src&#x3D;x onerror&#x3D;alert(1)&gt;${escaped}`);

    const device = await authorize();
    const browser = newBrowser();
    const login = await enter(browser, device.user_code);
    const again = await signIn(browser, login, 'wrong', `"><img src=x onerror=alert(1)>`);
    t.equal(again.status, 400);
    t.notOk(again.body.includes('<img'));
    t.match(again.body, /value="&quot;&gt;&lt;img src&#x3D;x onerror&#x3D;alert\(1\)&gt;"/);
  });

  t.test('other methods, non-form bodies and unknown sub-pages get error pages with the same headers', async (t) => {
    const browser = newBrowser();
    await browser.get(`${gw.url}/device`);
    for (const [method, path] of [
      ['PUT', '/device'],
      ['DELETE', '/device'],
      ['GET', '/device/login'],
      ['GET', '/device/consent'],
    ] as const) {
      const res = await fetch(`${gw.url}${path}`, { method });
      t.equal(res.status, 405, `${method} ${path}`);
      const page = new PageResponse(res.status, res.headers, await res.text());
      assertPageHeaders(t, page, `${method} ${path}`);
      t.equal(errorMessage(page), 'This page does not accept that kind of request.');
    }
    const json = await fetch(`${gw.url}/device`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    t.equal(json.status, 400);
    assertPageHeaders(t, new PageResponse(json.status, json.headers, await json.text()), 'a non-form POST');
  });
}

// Gateways take seconds to boot on a loaded machine: both start at once, once per file.
const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);
const [memoryGateway, redisGateway] = await Promise.all([
  startTestGateway(t, { patch: patchFor({ type: 'memory' }) }),
  startTestGateway(t, { patch: patchFor({ type: 'redis', url: redis.url }) }),
]);

// The two stores share nothing (own gateway, own store, own throttles): run them side by side.
t.jobs = 2;
t.test('memory store', async (t) => pageRules(t, memoryGateway, '127.11.0'));
t.test('redis store', async (t) => pageRules(t, redisGateway, '127.12.0'));
