// Resource indicators (RFC 8707) end to end: the `resource` parameter at the authorization,
// device authorization and token endpoints, for every grant, over raw HTTP; and openid-client
// passing it through the code flow and a refresh, the tokens checked with jose against the JWKS.
import t from 'tap';
import { decideDeviceCode } from '../helpers/device_approval.js';
import * as oidc from 'openid-client';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { startTestGateway, type TestGateway } from '../helpers/test_gateway.js';
import { addPasswordFixtures, offlineUserClient, passwordFixtures } from '../helpers/password_users.js';
import { AuthorizeFlow, callbackUri, codeFlowClient, pkcePair } from '../helpers/authorize_flow.js';
import { basicAuthorization } from '../helpers/basic_authorization.js';

const deviceGrant = 'urn:ietf:params:oauth:grant-type:device_code';
const fixtures = await passwordFixtures();

const gw: TestGateway = await startTestGateway(t, {
  patch: (raw) => {
    addPasswordFixtures(raw, fixtures);
    (raw.apiScopes as unknown[]).push({ name: 'api3' });
    (raw.apiResources as unknown[]).push({ name: 'urn:api3', scopes: ['api3'] });
    const userScopes = ['openid', 'api1', 'api2', 'offline_access'];
    (raw.clients as unknown[]).push(
      offlineUserClient('ro-res', { allowedScopes: userScopes }),
      codeFlowClient('web-res', { allowedScopes: userScopes }),
      {
        clientId: 'tv-res',
        clientName: 'Living-room TV',
        requireClientSecret: false,
        allowedGrantTypes: [deviceGrant, 'refresh_token'],
        allowedScopes: userScopes,
        allowOfflineAccess: true,
        pollingInterval: 1,
      },
    );
  },
});
t.teardown(() => gw.stop());

const bodies = {
  notAllowed: {
    error: 'invalid_target',
    error_description: 'The client cannot obtain a token for the requested resource with the requested scope.',
  },
  malformed: { error: 'invalid_target', error_description: 'The resource parameter must be an absolute URI without a fragment.' },
  exceedsGrant: { error: 'invalid_target', error_description: 'The requested resource exceeds the resources originally granted.' },
} as const;

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** A form POST with parameters in order (a repeated `resource` stays repeated), Basic `secret` unless public. */
async function post(path: string, params: [string, string][], clientId: string, confidential = true): Promise<Answer> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  const body = new URLSearchParams(params);
  if (confidential) headers.authorization = basicAuthorization(clientId);
  else body.set('client_id', clientId);
  const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers, body: body.toString() });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
const token = (params: [string, string][], clientId: string, confidential = true) => post('/connect/token', params, clientId, confidential);

/** The access token's `aud` and `scope`, with the response's `scope`, as the tests compare them. */
function audienceOf(answer: Answer): { aud: unknown; scope: unknown; responseScope: unknown } {
  if (answer.status !== 200) throw new Error(`token request failed: ${answer.status} ${JSON.stringify(answer.body)}`);
  const claims = decodeJwt(answer.body.access_token as string);
  return { aud: claims.aud, scope: claims.scope, responseScope: answer.body.scope };
}
const expected = (aud: string | string[], scope: string) => ({ aud, scope, responseScope: scope });
const refused = (body: Record<string, string>) => ({ status: 400, body });

t.test('client_credentials', async (t) => {
  const cc: [string, string][] = [['grant_type', 'client_credentials']];
  t.test('without resource, aud is every resource of the granted scopes, as before', async (t) => {
    t.same(audienceOf(await token(cc, 'm2m')), expected(['urn:api1', 'urn:api2'], 'api1 api2'));
  });
  t.test('one resource: aud is that resource, scope only its scopes', async (t) => {
    t.same(audienceOf(await token([...cc, ['resource', 'urn:api2']], 'm2m')), expected('urn:api2', 'api2'));
  });
  t.test('two resources: aud is both', async (t) => {
    const answer = await token([...cc, ['resource', 'urn:api2'], ['resource', 'urn:api1']], 'm2m');
    t.same(audienceOf(answer), expected(['urn:api1', 'urn:api2'], 'api1 api2'));
  });
  t.test('an explicit scope is narrowed to the scopes of the resource', async (t) => {
    t.same(audienceOf(await token([...cc, ['scope', 'api1 api2'], ['resource', 'urn:api1']], 'm2m')), expected('urn:api1', 'api1'));
  });
  t.test('an unknown resource is invalid_target', async (t) => {
    t.same(await token([...cc, ['resource', 'https://unknown.example/api']], 'm2m'), refused(bodies.notAllowed));
  });
  t.test('a resource no allowed scope reaches is invalid_target', async (t) => {
    t.same(await token([...cc, ['resource', 'urn:api3']], 'm2m'), refused(bodies.notAllowed), 'api3 is not allowed to m2m');
  });
  t.test('a resource the requested scope does not reach is invalid_target', async (t) => {
    t.same(await token([...cc, ['scope', 'api1'], ['resource', 'urn:api2']], 'm2m'), refused(bodies.notAllowed));
  });
  t.test('one bad resource among good ones is invalid_target', async (t) => {
    t.same(await token([...cc, ['resource', 'urn:api1'], ['resource', 'urn:api3']], 'm2m'), refused(bodies.notAllowed));
  });
  t.test('a relative URI, a fragment or a space inside one value is malformed', async (t) => {
    for (const value of ['api1', 'urn:api1#part', 'urn:api1 urn:api2']) {
      t.same(await token([...cc, ['resource', value]], 'm2m'), refused(bodies.malformed), value);
    }
  });
});

t.test('password and refresh_token', async (t) => {
  const password = (extra: [string, string][]) =>
    token(
      [['grant_type', 'password'], ['username', 'alice'], ['password', 'alice-pw'], ['scope', 'api1 api2 offline_access'], ...extra],
      'ro-res',
    );
  const refresh = (refreshToken: string, extra: [string, string][] = []) =>
    token([['grant_type', 'refresh_token'], ['refresh_token', refreshToken], ...extra], 'ro-res');

  t.test('one and two resources select the audience', async (t) => {
    t.same(audienceOf(await password([['resource', 'urn:api1']])), expected('urn:api1', 'api1 offline_access'));
    const both = await password([
      ['resource', 'urn:api1'],
      ['resource', 'urn:api2'],
    ]);
    t.same(audienceOf(both), expected(['urn:api1', 'urn:api2'], 'api1 api2 offline_access'));
  });
  t.test('a resource the request scope does not reach is invalid_target', async (t) => {
    t.same(await password([['resource', 'urn:api3']]), refused(bodies.notAllowed));
  });

  t.test('a refresh narrows to one resource of the grant; the refresh token keeps the whole grant', async (t) => {
    const first = await password([
      ['resource', 'urn:api1'],
      ['resource', 'urn:api2'],
    ]);
    const narrowed = await refresh(first.body.refresh_token as string, [['resource', 'urn:api2']]);
    t.same(audienceOf(narrowed), expected('urn:api2', 'api2 offline_access'));
    const whole = await refresh(narrowed.body.refresh_token as string);
    t.same(audienceOf(whole), expected(['urn:api1', 'urn:api2'], 'api1 api2 offline_access'), 'without resource: the grant again');
  });
  t.test('a refresh for a resource outside the grant is invalid_target and leaves the token usable', async (t) => {
    const first = await password([['resource', 'urn:api1']]);
    const refreshToken = first.body.refresh_token as string;
    // api2 is a scope this client may have, but the grant was made for urn:api1 only.
    t.same(await refresh(refreshToken, [['resource', 'urn:api2']]), refused(bodies.exceedsGrant));
    t.same(await refresh(refreshToken, [['resource', 'https://unknown.example/api']]), refused(bodies.exceedsGrant));
    t.same(audienceOf(await refresh(refreshToken)), expected('urn:api1', 'api1 offline_access'));
  });
  t.test('a grant made without resource can be refreshed for one of its resources', async (t) => {
    const first = await password([]);
    t.same(audienceOf(first), expected(['urn:api1', 'urn:api2'], 'api1 api2 offline_access'));
    const narrowed = await refresh(first.body.refresh_token as string, [['resource', 'urn:api1']]);
    t.same(audienceOf(narrowed), expected('urn:api1', 'api1 offline_access'));
    t.same(await refresh(narrowed.body.refresh_token as string, [['resource', 'urn:api3']]), refused(bodies.notAllowed));
  });
  t.test('a refresh narrowing scope and resource together must still reach the resource', async (t) => {
    const first = await password([
      ['resource', 'urn:api1'],
      ['resource', 'urn:api2'],
    ]);
    const refreshToken = first.body.refresh_token as string;
    t.same(
      await refresh(refreshToken, [
        ['scope', 'api2'],
        ['resource', 'urn:api1'],
      ]),
      refused(bodies.notAllowed),
    );
    t.same(audienceOf(await refresh(refreshToken, [['scope', 'api2']])), expected('urn:api2', 'api2'));
  });
});

t.test('authorization_code', async (t) => {
  const { verifier, challenge } = pkcePair();
  const flow = new AuthorizeFlow(gw);
  const params = (resources: string[]): [string, string][] => [
    ...Object.entries(flow.params('web-res', challenge, { scope: 'openid api1 api2 offline_access' })),
    ...resources.map((r): [string, string] => ['resource', r]),
  ];
  const redeem = (code: string, extra: [string, string][] = []) =>
    token(
      [['grant_type', 'authorization_code'], ['code', code], ['redirect_uri', callbackUri], ['code_verifier', verifier], ...extra],
      'web-res',
    );
  const refresh = (refreshToken: string, extra: [string, string][] = []) =>
    token([['grant_type', 'refresh_token'], ['refresh_token', refreshToken], ...extra], 'web-res');

  t.test('resources on authorize bind the code; the redemption narrows to one, the refresh token keeps both', async (t) => {
    const response = await flow.code(params(['urn:api1', 'urn:api2']));
    const code = response.get('code') as string;
    t.same(await redeem(code, [['resource', 'urn:api3']]), refused(bodies.exceedsGrant), 'not a resource of the request');
    const tokens = await redeem(code, [['resource', 'urn:api2']]);
    t.same(audienceOf(tokens), expected('urn:api2', 'openid api2 offline_access'), 'the refused attempt left the code usable');
    t.type(tokens.body.id_token, 'string');
    const whole = await refresh(tokens.body.refresh_token as string);
    t.same(audienceOf(whole), expected(['urn:api1', 'urn:api2'], 'openid api1 api2 offline_access'));
    const other = await refresh(whole.body.refresh_token as string, [['resource', 'urn:api1']]);
    t.same(audienceOf(other), expected('urn:api1', 'openid api1 offline_access'));
  });

  t.test('one resource on authorize narrows the scopes granted and shown', async (t) => {
    const page = await flow.authorize(params(['urn:api1']));
    const consent = page.body.includes('name="password"') ? await flow.login(page, 'alice', 'alice-pw') : page;
    const listed = /<ul class="scopes">([\s\S]*?)<\/ul>/.exec(consent.body)?.[1] ?? '';
    t.match(listed, /api1/);
    t.notMatch(listed, /api2/, 'the consent page lists only the scopes of the resource');
    const answer = await flow.decide(consent, 'allow');
    const code = new URL(answer.location as string).searchParams.get('code') as string;
    t.same(audienceOf(await redeem(code)), expected('urn:api1', 'openid api1 offline_access'));
  });

  t.test('without resource on authorize, the redemption may ask for one resource of the granted scopes', async (t) => {
    const code = (await flow.code(params([]))).get('code') as string;
    const tokens = await redeem(code, [['resource', 'urn:api1']]);
    t.same(audienceOf(tokens), expected('urn:api1', 'openid api1 offline_access'));
    const whole = await refresh(tokens.body.refresh_token as string);
    t.same(audienceOf(whole), expected(['urn:api1', 'urn:api2'], 'openid api1 api2 offline_access'), 'bound to the whole grant');
  });

  t.test('an unknown resource on authorize is redirected back as invalid_target', async (t) => {
    const page = await flow.authorize(params(['urn:api1', 'https://unknown.example/api']));
    t.equal(page.status, 302);
    const location = new URL(page.location as string);
    t.equal(location.searchParams.get('error'), 'invalid_target');
    t.equal(location.searchParams.get('error_description'), bodies.notAllowed.error_description);
    t.equal(location.searchParams.get('state'), 'st-123');
  });
});

t.test('device_code', async (t) => {
  const authorize = (extra: [string, string][]) =>
    post('/connect/deviceauthorization', [['scope', 'openid api1 api2 offline_access'], ...extra], 'tv-res', false);

  t.test('resources on the device authorization bind the device code; the token request narrows', async (t) => {
    const device = await authorize([
      ['resource', 'urn:api1'],
      ['resource', 'urn:api2'],
    ]);
    t.equal(device.status, 200);
    await approve(device.body.user_code as string);
    const poll = (extra: [string, string][]) =>
      token([['grant_type', deviceGrant], ['device_code', device.body.device_code as string], ...extra], 'tv-res', false);
    t.same(await poll([['resource', 'urn:api3']]), refused(bodies.exceedsGrant));
    const tokens = await poll([['resource', 'urn:api1']]);
    t.same(audienceOf(tokens), expected('urn:api1', 'openid api1 offline_access'));
  });
  t.test('an unknown resource at the device authorization endpoint is invalid_target', async (t) => {
    t.same(await authorize([['resource', 'https://unknown.example/api']]), refused(bodies.notAllowed));
    t.same(await authorize([['resource', 'urn:api1#x']]), refused(bodies.malformed));
  });
});

/** The user's side of the device flow: alice signs in and allows. */
async function approve(userCode: string): Promise<void> {
  const status = await decideDeviceCode(gw.url, userCode, 'allow');
  if (status !== 200) throw new Error(`device approval failed: ${status}`);
}

t.test('openid-client passes resource through the code flow and a refresh; jose verifies aud against the JWKS', async (t) => {
  const config = await oidc.discovery(new URL(gw.config.issuer), 'web-res', undefined, oidc.ClientSecretBasic('secret'), {
    execute: [oidc.allowInsecureRequests],
  });
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const parameters = new URLSearchParams({
    redirect_uri: callbackUri,
    scope: 'openid api1 api2 offline_access',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
  });
  parameters.append('resource', 'urn:api1');
  parameters.append('resource', 'urn:api2');
  const flow = new AuthorizeFlow(gw);
  const url = oidc.buildAuthorizationUrl(config, parameters);
  const response = await flow.code([...url.searchParams.entries()]);
  const callback = new URL(`${callbackUri}?${response.toString()}`);

  const tokens = await oidc.authorizationCodeGrant(
    config,
    callback,
    { pkceCodeVerifier: verifier, expectedState: state },
    { resource: 'urn:api1' },
  );
  const jwks = createRemoteJWKSet(new URL(`${gw.url}/.well-known/openid-configuration/jwks`));
  const verify = (accessToken: string, audience: string) =>
    jwtVerify(accessToken, jwks, { issuer: gw.config.issuer, audience, typ: 'at+jwt' });
  const first = await verify(tokens.access_token, 'urn:api1');
  t.equal(first.payload.aud, 'urn:api1', 'only the requested resource');
  t.equal(first.payload.scope, 'openid api1 offline_access');
  await t.rejects(verify(tokens.access_token, 'urn:api2'), { code: 'ERR_JWT_CLAIM_VALIDATION_FAILED' }, 'not a token for urn:api2');

  const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string, { resource: 'urn:api2' });
  const second = await verify(refreshed.access_token, 'urn:api2');
  t.equal(second.payload.aud, 'urn:api2');
  t.equal(second.payload.scope, 'openid api2 offline_access');

  const outside: unknown = await oidc.refreshTokenGrant(config, refreshed.refresh_token as string, { resource: 'urn:api3' }).then(
    () => 'resolved',
    (e: unknown) => e,
  );
  t.match(outside, { error: 'invalid_target', status: 400, error_description: bodies.exceedsGrant.error_description });
});
