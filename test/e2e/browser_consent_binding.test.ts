// Consent bound to the page that was shown (issue 30), in a real browser: Chromium signs in once,
// then opens a request with prompt=login&max_age=0, which shows the login page. The penetration
// test's attack, from that page: a consent form put together by hand (its CSRF token, the
// request with wider scopes) is submitted; it used to return a code without the sign-in. Then the
// real consent page, its form given a wider `scope`, is refused too, and its own form works.
// Skipped, with the reason, where /usr/bin/chromium is missing; CI installs it (.ci/run).
import t from 'tap';
import type { Page } from 'playwright-core';
import { codeFlowClient, pkcePair } from '../helpers/authorize_flow.js';
import { startCallbackServer } from '../helpers/callback_server.js';
import { launchChromium, skipWithoutChromium } from '../helpers/chromium.js';
import { addPasswordFixtures, passwordFixtures } from '../helpers/password_users.js';
import { startTestGateway } from '../helpers/test_gateway.js';

const skip = skipWithoutChromium;

/**
 * Submits a form made in the page: the browser posts it as its own, cookies and Origin included.
 * (A script as text: the tests compile without the DOM's types.)
 */
async function submitForm(page: Page, action: string, fields: Record<string, string>): Promise<void> {
  await Promise.all([
    page.waitForNavigation(),
    page.evaluate(`(() => {
      const form = document.createElement('form');
      form.method = 'post';
      form.action = ${JSON.stringify(action)};
      for (const [name, value] of Object.entries(${JSON.stringify(fields)})) {
        const input = document.createElement('input');
        input.type = 'hidden';
        input.name = name;
        input.value = value;
        form.append(input);
      }
      document.body.append(form);
      form.submit();
    })()`),
  ]);
}

t.test('in a signed-in Chromium, a hand-made consent form neither skips prompt=login nor widens scopes', { skip }, async (t) => {
  const fixtures = await passwordFixtures();
  const callback = await startCallbackServer();
  t.teardown(callback.close);
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      addPasswordFixtures(raw, fixtures);
      (raw.clients as unknown[]).push(codeFlowClient('browser-app', { redirectUris: [callback.uri] }));
    },
  });
  const context = await launchChromium(t);
  const page = context.pages()[0] ?? (await context.newPage());
  const authorizationUrl = (extra: Record<string, string> = {}) =>
    `${gw.url}/connect/authorize?${new URLSearchParams({
      client_id: 'browser-app',
      redirect_uri: callback.uri,
      response_type: 'code',
      scope: 'openid api1',
      state: 'st',
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
      ...extra,
    }).toString()}`;
  const signIn = async () => {
    await page.getByLabel('Username').fill('alice');
    await page.getByLabel('Password').fill('alice-pw');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).waitFor();
  };

  // Signed in, with a code, as any user of the application would be.
  await page.goto(authorizationUrl());
  await signIn();
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.waitForURL((url) => url.href.startsWith(callback.uri));
  t.equal(callback.all.length, 1, 'the first code');
  // auth_time has whole seconds: max_age=0 passes within the sign-in's own second.
  await new Promise((resolve) => setTimeout(resolve, 1100));

  await page.goto(authorizationUrl({ prompt: 'login', max_age: '0' }));
  t.equal(await page.title(), 'Sign in · Tessera', 'prompt=login&max_age=0: the login page despite the session');
  const csrfToken = await page.inputValue('input[name="csrf_token"]');
  const request = new URLSearchParams(await page.inputValue('input[name="request"]'));
  request.set('scope', 'openid api1 offline_access');
  await submitForm(page, '/connect/authorize/consent', { csrf_token: csrfToken, request: request.toString(), decision: 'allow' });
  t.match(await page.textContent('p.error'), 'The form has expired', 'the hand-made consent form is refused');
  t.equal(callback.all.length, 1, 'no code without the sign-in');

  // The sign-in it asked for, then the real consent page with a wider scope slipped into its form.
  await page.goto(authorizationUrl({ prompt: 'login', max_age: '0' }));
  await signIn();
  t.notMatch(await page.textContent('ul.scopes'), 'offline', 'the page shows openid and api1 only');
  await page.evaluate(`(() => {
    const input = document.createElement('input');
    input.type = 'hidden';
    input.name = 'scope';
    input.value = 'openid api1 offline_access';
    document.querySelector('form').append(input);
  })()`);
  await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Allow' }).click()]);
  t.match(await page.textContent('p.error'), 'not shown', 'a wider scope than the page showed is refused');
  t.equal(callback.all.length, 1, 'no code for scopes that were not shown');

  await page.goto(authorizationUrl({ prompt: 'login', max_age: '0' }));
  await signIn();
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.waitForURL((url) => url.href.startsWith(callback.uri));
  t.equal(callback.all.length, 2, "the consent page's own form gives a code");
  t.match(callback.all[1]?.searchParams.get('code'), /^[\w-]{64}$/);
});
