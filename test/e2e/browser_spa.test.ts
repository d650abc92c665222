// A single-page application in a real browser (issue 17, "Browser clients"): the demo's public
// `spa` client (config/demo.json, with its port moved to a free one) serves a page from its own
// origin that runs the authorization code flow with PKCE in Chromium's JavaScript: it sends the
// browser to the authorization endpoint, and on its callback page redeems the code at the token
// endpoint and reads the user's claims from the UserInfo endpoint with fetch, cross-origin, which
// only CORS lets the page read (the Bearer header makes the browser send a preflight). A page of
// an origin no client lists cannot read discovery. Skipped where /usr/bin/chromium is missing;
// CI installs it (.ci/run).
import t from 'tap';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { launchChromium, skipWithoutChromium } from '../helpers/chromium.js';
import { startTestGateway } from '../helpers/test_gateway.js';

const skip = skipWithoutChromium;

interface DemoConfig {
  clients: { clientId: string; redirectUris?: string[]; allowedCorsOrigins?: string[] }[];
  users: unknown[];
  identityResources: unknown[];
}
const demo = JSON.parse(readFileSync(new URL('../../config/demo.json', import.meta.url), 'utf8')) as DemoConfig;

/** The SPA's pages, as a static host would serve them; `gateway` is the issuer the pages call. */
function spaPages(gateway: () => string): Record<string, string> {
  const start = `<!doctype html><title>SPA</title><script type="module">
    const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
    const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
    const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
    const state = b64url(crypto.getRandomValues(new Uint8Array(16)));
    sessionStorage.setItem('pkce', JSON.stringify({ verifier, state }));
    const discovery = await (await fetch('${'${GATEWAY}'}/.well-known/openid-configuration')).json();
    const url = new URL(discovery.authorization_endpoint);
    url.search = new URLSearchParams({ client_id: 'spa', response_type: 'code', scope: 'openid profile api1',
      redirect_uri: location.origin + '/callback', code_challenge: challenge, code_challenge_method: 'S256', state });
    location.assign(url);
  </script>`;
  const callback = `<!doctype html><title>Callback</title><pre id="result"></pre><script type="module">
    const report = (value) => { document.getElementById('result').textContent = JSON.stringify(value); };
    try {
      const { verifier, state } = JSON.parse(sessionStorage.getItem('pkce'));
      const params = new URLSearchParams(location.search);
      if (params.get('state') !== state) throw new Error('state mismatch');
      const discovery = await (await fetch('${'${GATEWAY}'}/.well-known/openid-configuration')).json();
      const tokenResponse = await fetch(discovery.token_endpoint, { method: 'POST',
        body: new URLSearchParams({ grant_type: 'authorization_code', code: params.get('code'), client_id: 'spa',
          redirect_uri: location.origin + '/callback', code_verifier: verifier }) });
      const tokens = await tokenResponse.json();
      const userInfoResponse = await fetch(discovery.userinfo_endpoint, { headers: { authorization: 'Bearer ' + tokens.access_token } });
      report({ tokenStatus: tokenResponse.status, tokens, userInfoStatus: userInfoResponse.status, userInfo: await userInfoResponse.json() });
    } catch (err) {
      report({ failed: String(err) });
    }
  </script>`;
  const other = `<!doctype html><title>Other</title><pre id="result"></pre><script type="module">
    try {
      const res = await fetch('${'${GATEWAY}'}/.well-known/openid-configuration');
      document.getElementById('result').textContent = JSON.stringify({ read: res.status });
    } catch (err) {
      document.getElementById('result').textContent = JSON.stringify({ failed: String(err) });
    }
  </script>`;
  const fill = (html: string) => html.replaceAll('${GATEWAY}', gateway());
  return {
    get '/'() {
      return fill(start);
    },
    get '/callback'() {
      return fill(callback);
    },
    get '/other'() {
      return fill(other);
    },
  };
}

async function startStaticHost(pages: Record<string, string>) {
  const server = createServer((req, res) => {
    const page = pages[new URL(req.url ?? '/', 'http://x').pathname];
    if (page === undefined) res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { origin: `http://127.0.0.1:${address.port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

t.test('the demo spa client runs the code flow with PKCE from its own origin in Chromium, CORS included', { skip }, async (t) => {
  let issuer = '';
  const pages = spaPages(() => issuer);
  const app = await startStaticHost(pages);
  t.teardown(app.close);
  const stranger = await startStaticHost(pages);
  t.teardown(stranger.close);
  const demoSpa = demo.clients.find((c) => c.clientId === 'spa');
  t.same(demoSpa?.allowedCorsOrigins, ['http://127.0.0.1:5003'], 'the demo spa client lists its own origin');
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      raw.users = demo.users;
      raw.identityResources = demo.identityResources;
      (raw.clients as unknown[]).push({ ...demoSpa, redirectUris: [`${app.origin}/callback`], allowedCorsOrigins: [app.origin] });
    },
  });
  issuer = gw.config.issuer;

  const context = await launchChromium(t);
  const page = context.pages()[0] ?? (await context.newPage());
  await page.goto(`${app.origin}/`);
  await page.getByLabel('Username').waitFor();
  t.equal(new URL(page.url()).origin, gw.url, 'the page sent the browser to the authorization endpoint');
  await page.getByLabel('Username').fill('alice');
  await page.getByLabel('Password').fill('alice');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.waitForURL((url) => url.href.startsWith(`${app.origin}/callback`));
  await page.locator('#result').filter({ hasText: /\S/ }).waitFor();
  const result = JSON.parse((await page.locator('#result').textContent()) ?? '{}') as {
    failed?: string;
    tokenStatus: number;
    tokens: { access_token: string; id_token: string; token_type: string };
    userInfoStatus: number;
    userInfo: Record<string, unknown>;
  };
  t.notOk(result.failed, `the page's own script ran to the end${result.failed ? `: ${result.failed}` : ''}`);
  t.equal(result.tokenStatus, 200, 'the page read the token response');
  t.equal(result.tokens.token_type, 'Bearer');
  t.equal(result.userInfoStatus, 200, 'the page read UserInfo after a preflight for its Bearer header');
  t.match(result.userInfo, { sub: '818727', name: 'Alice Smith' });
  const jwks = createRemoteJWKSet(new URL(`${gw.url}/.well-known/openid-configuration/jwks`));
  const { payload } = await jwtVerify(result.tokens.access_token, jwks, { issuer, audience: 'urn:api1', typ: 'at+jwt' });
  t.equal(payload.client_id, 'spa');
  t.equal(payload.sub, '818727');

  await page.goto(`${stranger.origin}/other`);
  await page.locator('#result').filter({ hasText: /\S/ }).waitFor();
  const refused = JSON.parse((await page.locator('#result').textContent()) ?? '{}') as { failed?: string; read?: number };
  t.match(refused, { failed: /TypeError/ }, 'a page of an origin no client lists cannot read the answer');
});
