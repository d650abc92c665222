// The login and consent pages in a real browser (issue 6): Debian's Chromium, driven by
// playwright-core, opens the authorization URL, signs in, allows, and the test's own redirect
// endpoint receives the code, which openid-client then redeems. The login page's screenshot is
// kept as a test artifact (test/artifacts/, git-ignored). Skipped, with the reason, where
// /usr/bin/chromium is missing; CI installs it (.ci/run).
import t from 'tap';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as oidc from 'openid-client';
import { codeFlowClient } from '../helpers/authorize_flow.js';
import { startCallbackServer } from '../helpers/callback_server.js';
import { addPasswordFixtures, passwordFixtures } from '../helpers/password_users.js';
import { launchChromium, skipWithoutChromium } from '../helpers/chromium.js';
import { startTestGateway } from '../helpers/test_gateway.js';

const artifactsDir = fileURLToPath(new URL('../artifacts/', import.meta.url));
const skip = skipWithoutChromium;

t.test('Chromium signs in on the login page, allows, and the redirect endpoint receives a code that redeems', { skip }, async (t) => {
  const fixtures = await passwordFixtures();
  const callback = await startCallbackServer();
  t.teardown(callback.close);
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      addPasswordFixtures(raw, fixtures);
      (raw.clients as unknown[]).push(codeFlowClient('browser-app', { clientName: 'Example App', redirectUris: [callback.uri] }));
    },
  });

  const context = await launchChromium(t, { viewport: { width: 900, height: 640 }, colorScheme: 'light' });

  const config = await oidc.discovery(new URL(gw.config.issuer), 'browser-app', undefined, oidc.ClientSecretBasic('secret'), {
    execute: [oidc.allowInsecureRequests],
  });
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const authorizationUrl = oidc.buildAuthorizationUrl(config, {
    redirect_uri: callback.uri,
    scope: 'openid profile api1',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });

  const page = context.pages()[0] ?? (await context.newPage());
  const login = await page.goto(authorizationUrl.href);
  t.equal(login?.status(), 200);
  t.equal(await page.title(), 'Sign in · Tessera');
  t.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Sign in');
  t.match(await page.locator('p.lead').textContent(), 'Example App');
  mkdirSync(artifactsDir, { recursive: true });
  await page.screenshot({ path: path.join(artifactsDir, 'login-page.png') });

  await page.getByLabel('Username').fill('alice');
  await page.getByLabel('Password').fill('alice-pw');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Allow' }).waitFor();
  t.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Allow access?');
  const session = (await context.cookies(gw.url)).find((c) => c.name === 'tessera.session');
  t.match(
    session,
    { httpOnly: true, sameSite: 'Lax', secure: false, path: '/' },
    'the browser holds an HttpOnly, SameSite=Lax session cookie',
  );

  await page.getByRole('button', { name: 'Allow' }).click();
  const redirected = await callback.received;
  await page.waitForURL((url) => url.href.startsWith(callback.uri));
  t.match(await page.textContent('body'), 'Signed in.', 'the browser landed on the redirect endpoint');
  t.equal(redirected.searchParams.get('state'), state);
  t.equal(redirected.searchParams.get('iss'), gw.config.issuer);
  t.match(redirected.searchParams.get('code'), /^[\w-]{64}$/);

  const tokens = await oidc.authorizationCodeGrant(config, redirected, {
    pkceCodeVerifier: verifier,
    expectedState: state,
    expectedNonce: nonce,
  });
  t.equal(tokens.claims()?.sub, 'sub-alice');
  t.equal(tokens.claims()?.name, 'Alice');
  t.equal(tokens.scope, 'openid profile api1');
});
