/**
 * A client created through the admin API at the authorization endpoint and the pages
 * (docs/architecture.md, "Clients in the store"): the code flow with PKCE end to end, a pushed
 * request, the device page, the grants page and RP-initiated logout, on the memory store.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { AuthorizeFlow, callbackUri, pkcePair } from '../../helpers/authorize_flow.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { BrowserSession } from '../../helpers/browser_session.js';
import { decideDeviceCode } from '../../helpers/device_approval.js';
import { startTestGateway } from '../../helpers/test_gateway.js';
import { hashPassword } from '../../../core/crypto/password_hash.js';

const adminToken = 'admin-token-for-the-store-client-pages-test-0123';
const tokenFile = path.join(t.testdir(), 'admin.token');
writeFileSync(tokenFile, adminToken);
const aliceHash = await hashPassword('alice-pw');
const gateway = await startTestGateway(t, {
  patch: (raw) => {
    raw.users = [{ subjectId: 'sub-alice', username: 'alice', passwordHash: aliceHash, claims: { name: 'Alice' } }];
    raw.clientRegistry = { store: true };
    raw.admin = { tokenFile };
  },
});
const clientId = 'store-web';
const logoutUri = 'http://127.0.0.1:5002/signed-out';

const created = await fetch(`${gateway.managementUrl}/admin/clients`, {
  method: 'POST',
  headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
  body: JSON.stringify({
    clientId,
    clientName: 'Store Web',
    allowedGrantTypes: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
    allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
    allowOfflineAccess: true,
    redirectUris: [callbackUri],
    postLogoutRedirectUris: [logoutUri],
  }),
});
const { secret } = (await created.json()) as { secret: string };
if (created.status !== 201) throw new Error(`admin API answered ${created.status}`);

const flow = new AuthorizeFlow(gateway);

t.test('runs the code flow with PKCE, then refreshes', async (t) => {
  const pkce = pkcePair();
  const response = await flow.code(flow.params(clientId, pkce.challenge));
  t.equal(response.get('state'), 'st-123');
  const tokens = await flow.token(
    { grant_type: 'authorization_code', code: response.get('code') ?? '', redirect_uri: callbackUri, code_verifier: pkce.verifier },
    { clientId, secret },
  );
  t.equal(tokens.status, 200, tokens.status === 200 ? 'tokens' : tokens.body);
  const body = JSON.parse(tokens.body) as { id_token?: string; refresh_token?: string };
  t.type(body.id_token, 'string');
  const refreshed = await flow.token({ grant_type: 'refresh_token', refresh_token: body.refresh_token ?? '' }, { clientId, secret });
  t.equal(refreshed.status, 200, refreshed.status === 200 ? 'refreshed' : refreshed.body);
});

t.test('runs a pushed request (RFC 9126)', async (t) => {
  const pkce = pkcePair();
  const pushed = await fetch(`${gateway.url}/connect/par`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization(clientId, secret) },
    body: new URLSearchParams(flow.params(clientId, pkce.challenge)).toString(),
  });
  t.equal(pushed.status, 201);
  const { request_uri } = (await pushed.json()) as { request_uri: string };
  const response = await flow.code({ client_id: clientId, request_uri });
  t.type(response.get('code'), 'string');
});

t.test('shows the client by name on the grants page', async (t) => {
  const page = await flow.browser.get(`${gateway.url}/connect/grants`);
  t.equal(page.status, 200);
  t.match(page.body, 'Store Web');
});

t.test('approves a device code on the device page', async (t) => {
  const asked = await fetch(`${gateway.url}/connect/deviceauthorization`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization(clientId, secret) },
    body: 'scope=openid api1',
  });
  t.equal(asked.status, 200);
  const { user_code, device_code } = (await asked.json()) as { user_code: string; device_code: string };
  t.equal(await decideDeviceCode(gateway.url, user_code, 'allow'), 200);
  const tokens = await flow.token({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code }, { clientId, secret });
  t.equal(tokens.status, 200, tokens.status === 200 ? 'tokens' : tokens.body);
});

t.test('returns to the client after RP-initiated logout', async (t) => {
  const query = new URLSearchParams({ client_id: clientId, post_logout_redirect_uri: logoutUri, state: 's1' });
  const page = await new BrowserSession().get(`${gateway.url}/connect/endsession?${query}`);
  t.equal(page.status, 302);
  t.equal(page.location, `${logoutUri}?state=s1`);
});

t.test('an unknown client is still refused', async (t) => {
  const page = await flow.authorize(flow.params('nobody', pkcePair().challenge));
  t.equal(page.status, 400);
  t.match(page.body, 'The application is unknown.');
});

t.test('dynamic client registration is off by default: 404, and not in discovery', async (t) => {
  const res = await fetch(`${gateway.url}/connect/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [callbackUri] }),
  });
  t.equal(res.status, 404);
  await res.arrayBuffer();
  const document = (await (await fetch(`${gateway.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
  t.notOk('registration_endpoint' in document);
});
