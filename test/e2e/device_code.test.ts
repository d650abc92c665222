import t from 'tap';
import * as oidc from 'openid-client';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { startTestGateway } from '../helpers/test_gateway.js';
import { addPasswordFixtures, passwordFixtures } from '../helpers/password_users.js';
import { BrowserSession } from '../helpers/browser_session.js';

const fixtures = await passwordFixtures();

t.test('openid-client completes the device flow while the user approves on the /device page', async (t) => {
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      addPasswordFixtures(raw, fixtures);
      (raw.clients as unknown[]).push({
        clientId: 'tv',
        clientName: 'Living-room TV',
        requireClientSecret: false,
        allowedGrantTypes: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
        allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
        allowOfflineAccess: true,
        pollingInterval: 1,
      });
    },
  });
  const config = await oidc.discovery(new URL(gw.config.issuer), 'tv', undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
  const device = await oidc.initiateDeviceAuthorization(config, { scope: 'openid api1 offline_access' });
  t.match(device.user_code, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
  t.equal(device.verification_uri, `${gw.config.issuer}/device`);
  t.equal(device.verification_uri_complete, `${gw.config.issuer}/device?user_code=${device.user_code}`);
  t.equal(device.interval, 1);
  t.equal(device.expires_in, 300);
  t.ok(Buffer.from(device.device_code, 'base64url').length >= 32, 'device code carries at least 256 bits');

  const approve = (async () => {
    const browser = new BrowserSession();
    const entry = await browser.get(`${gw.url}/device`);
    t.equal(entry.status, 200);
    // Case, dash and space insensitive.
    const typed = ` ${device.user_code.toLowerCase().replace('-', ' ')} `;
    const login = await browser.post(`${gw.url}/device`, { csrf_token: entry.hidden('csrf_token'), user_code: typed });
    t.equal(login.status, 200, login.body.slice(0, 400));
    t.match(login.body, /Living-room TV/);
    const consent = await browser.post(`${gw.url}/device/login`, {
      csrf_token: login.hidden('csrf_token'),
      request: login.hidden('request'),
      username: 'alice',
      password: 'alice-pw',
    });
    t.equal(consent.status, 200);
    const done = await browser.post(`${gw.url}/device/consent`, { csrf_token: consent.hidden('csrf_token'), request: consent.hidden('request'), decision: 'allow' });
    t.equal(done.status, 200);
    t.match(done.body, /connected/);
  })();

  const tokens = await oidc.pollDeviceAuthorizationGrant(config, device);
  await approve;
  t.type(tokens.refresh_token, 'string');
  t.equal(tokens.claims()?.sub, 'sub-alice');
  const jwks = createRemoteJWKSet(new URL(`${gw.url}/.well-known/openid-configuration/jwks`));
  const { payload } = await jwtVerify(tokens.access_token, jwks, { issuer: gw.config.issuer, audience: 'urn:api1', typ: 'at+jwt' });
  t.equal(payload.sub, 'sub-alice');
  t.equal(payload.client_id, 'tv');
});
