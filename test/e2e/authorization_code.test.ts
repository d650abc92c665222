import t from 'tap';
import * as oidc from 'openid-client';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { sha256Secret, startTestGateway } from '../helpers/test_gateway.js';
import { addPasswordFixtures, passwordFixtures } from '../helpers/password_users.js';
import { BrowserSession } from '../helpers/browser_session.js';

const fixtures = await passwordFixtures();
const redirectUri = 'http://127.0.0.1:5002/callback';

t.test('openid-client runs the authorization code flow with PKCE through the login and consent pages', async (t) => {
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      addPasswordFixtures(raw, fixtures);
      (raw.identityResources as unknown[]).push({ name: 'email', claims: ['email'] });
      (raw.users as { claims?: Record<string, string> }[])[0]!.claims = { name: 'Alice Example', email: 'alice@example.com' };
      (raw.clients as unknown[]).push({
        clientId: 'web',
        clientName: 'Web <App>',
        clientSecrets: [{ value: sha256Secret('secret') }],
        allowedGrantTypes: ['authorization_code', 'refresh_token'],
        allowedScopes: ['openid', 'profile', 'email', 'api1', 'offline_access'],
        allowOfflineAccess: true,
        redirectUris: [redirectUri],
      });
    },
  });
  const config = await oidc.discovery(new URL(gw.config.issuer), 'web', undefined, oidc.ClientSecretBasic('secret'), {
    execute: [oidc.allowInsecureRequests],
  });
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const authorizationUrl = oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid profile email api1 offline_access',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });

  const browser = new BrowserSession();
  const login = await browser.get(authorizationUrl.href);
  t.equal(login.status, 200);
  t.equal(login.headers.get('x-frame-options'), 'DENY');
  t.equal(login.headers.get('referrer-policy'), 'same-origin');
  t.equal(login.headers.get('cache-control'), 'no-store');
  t.match(login.body, /name="username"/);
  t.match(login.body, /Web &lt;App&gt;/, 'the client name is escaped');

  const consent = await browser.post(`${gw.url}/connect/authorize/login`, {
    csrf_token: login.hidden('csrf_token'),
    request: login.hidden('request'),
    username: 'alice',
    password: 'alice-pw',
  });
  t.equal(consent.status, 200, consent.body.slice(0, 300));
  t.match(consent.body, /value="allow"/);
  t.match(consent.body, /\(<strong>alice<\/strong>\)/, 'the consent page names the signed-in user');
  const session = browser.cookie('tessera.session');
  t.ok(session, 'a session cookie is set');

  const callback = await browser.post(`${gw.url}/connect/authorize/consent`, {
    csrf_token: consent.hidden('csrf_token'),
    interaction: consent.hidden('interaction'),
    decision: 'allow',
  });
  t.equal(callback.status, 302);
  const location = new URL(callback.location as string);
  t.equal(`${location.origin}${location.pathname}`, redirectUri);
  t.equal(location.searchParams.get('state'), state);
  t.equal(location.searchParams.get('iss'), gw.config.issuer);

  const tokens = await oidc.authorizationCodeGrant(config, location, {
    pkceCodeVerifier: verifier,
    expectedState: state,
    expectedNonce: nonce,
  });
  const idClaims = tokens.claims();
  t.equal(idClaims?.sub, 'sub-alice');
  t.equal(idClaims?.nonce, nonce);
  t.equal(idClaims?.name, 'Alice Example', 'profile claims for the profile scope');
  t.equal(idClaims?.email, 'alice@example.com');
  t.type(idClaims?.auth_time, 'number');
  t.type(idClaims?.sid, 'string');
  t.type(tokens.refresh_token, 'string');

  const jwks = createRemoteJWKSet(new URL(`${gw.url}/.well-known/openid-configuration/jwks`));
  const { payload } = await jwtVerify(tokens.access_token, jwks, { issuer: gw.config.issuer, audience: 'urn:api1', typ: 'at+jwt' });
  t.equal(payload.sub, 'sub-alice');
  t.equal(payload.client_id, 'web');
  t.same(payload.amr, ['pwd']);

  // UserInfo (OIDC Core §5.3) through openid-client, which checks that sub matches the ID token's.
  const userInfo = await oidc.fetchUserInfo(config, tokens.access_token, idClaims?.sub as string);
  t.equal(userInfo.sub, 'sub-alice');
  t.equal(userInfo.name, 'Alice Example', 'the same profile claims as the ID token');
  t.equal(userInfo.email, 'alice@example.com');
  await t.rejects(oidc.fetchUserInfo(config, tokens.access_token, 'sub-mallory'), 'a subject mismatch is caught by the client');

  const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string);
  const refreshedId = refreshed.claims();
  t.equal(refreshedId?.sub, idClaims?.sub);
  t.equal(refreshedId?.aud, idClaims?.aud);
  t.equal(refreshedId?.auth_time, idClaims?.auth_time, 'OIDC Core §12.2: the same auth_time');

  t.test('single sign-on: a second request skips the login page', async (t) => {
    const again = await browser.get(
      oidc.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: 'openid',
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      }).href,
    );
    t.equal(again.status, 200);
    t.match(again.body, /value="allow"/, 'straight to consent');
  });
});
