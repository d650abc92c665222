// `POST /connect/revocation` (RFC 7009) over HTTP (gateway/endpoints/revocation_endpoint.ts,
// workers/endpoints/revocation.ts): what gets revoked, what is left alone, and the exact answers.
// Whether a token is still alive is read at the introspection endpoint and the token endpoint.
import t, { type Test } from 'tap';
import { randomBytes, randomUUID } from 'node:crypto';
import * as oidc from 'openid-client';
import { importJWK, SignJWT } from 'jose';
import { sha256Secret, startTestGateway, writeSigningKey } from '../../helpers/test_gateway.js';
import { addPasswordFixtures, offlineUserClient, passwordFixtures } from '../../helpers/password_users.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';

const fixtures = await passwordFixtures();
const form = 'application/x-www-form-urlencoded';
const inactive = '{"active":false}';
const invalidClient = '{"error":"invalid_client","error_description":"Client authentication failed."}';
const rejectedRefresh = '{"error":"invalid_grant","error_description":"The refresh token is invalid, expired or revoked."}';

const userClient = offlineUserClient;

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

interface Tokens {
  access_token: string;
  refresh_token: string;
}

t.test('revocation endpoint', async (t) => {
  const { key: signingKey, signing } = await writeSigningKey(t);
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      addPasswordFixtures(raw, fixtures);
      raw.signing = signing;
      raw.throttling = { clientAuthentication: { maxFailures: 1000, windowSeconds: 60 } };
      raw.apiResources = [
        { name: 'urn:api1', scopes: ['api1'], secrets: [{ value: sha256Secret('api1-secret') }] },
        { name: 'urn:api2', scopes: ['api2'], secrets: [] },
      ];
      (raw.clients as unknown[]).push(
        userClient('app'),
        userClient('app2'),
        userClient('spa', { requireClientSecret: false, clientSecrets: [] }),
      );
    },
  });
  const revocationUrl = `${gw.url}/connect/revocation`;

  async function post(url: string, params: Record<string, string>, authorization?: string): Promise<Answer> {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': form, ...(authorization ? { authorization } : {}) },
      body: new URLSearchParams(params).toString(),
    });
    return { status: res.status, headers: res.headers, text: await res.text() };
  }
  const revoke = (token: string, clientId = 'app', extra: Record<string, string> = {}) =>
    post(revocationUrl, { token, ...extra }, basicAuthorization(clientId, 'secret'));
  /** What an API resource sees: works for the access tokens of every client, the public one's too. */
  const introspectAsApi = async (token: string) =>
    (await post(`${gw.url}/connect/introspect`, { token }, basicAuthorization('urn:api1', 'api1-secret'))).text;
  const introspectAsClient = async (token: string, clientId = 'app') =>
    (await post(`${gw.url}/connect/introspect`, { token }, basicAuthorization(clientId, 'secret'))).text;
  const refresh = (refreshToken: string, clientId = 'app') =>
    post(gw.tokenUrl, { grant_type: 'refresh_token', refresh_token: refreshToken }, basicAuthorization(clientId, 'secret'));

  async function login(clientId = 'app'): Promise<Tokens> {
    const params = { grant_type: 'password', username: 'alice', password: 'alice-pw', scope: 'api1 offline_access' };
    const answer =
      clientId === 'spa'
        ? await post(gw.tokenUrl, { ...params, client_id: 'spa' })
        : await post(gw.tokenUrl, params, basicAuthorization(clientId, 'secret'));
    if (answer.status !== 200) throw new Error(`login failed: ${answer.text}`);
    return JSON.parse(answer.text) as Tokens;
  }

  async function refreshed(tokens: Tokens, clientId = 'app'): Promise<Tokens> {
    const answer = await refresh(tokens.refresh_token, clientId);
    if (answer.status !== 200) throw new Error(`refresh failed: ${answer.text}`);
    return JSON.parse(answer.text) as Tokens;
  }

  /** RFC 7009 §2.2: 200, and nothing in the body. */
  function assertRevokedAnswer(t: Test, answer: Answer, message = '200 with an empty body'): void {
    t.equal(answer.status, 200, message);
    t.equal(answer.text, '', message);
    t.equal(answer.headers.get('content-length'), '0', message);
    t.equal(answer.headers.get('content-type'), null, message);
    t.equal(answer.headers.get('cache-control'), 'no-store', message);
  }

  t.test('revokes a refresh token with its whole family, access tokens included', async (t) => {
    const first = await login();
    const second = await refreshed(first);
    t.match(JSON.parse(await introspectAsApi(second.access_token)), { active: true });
    assertRevokedAnswer(t, await revoke(second.refresh_token, 'app', { token_type_hint: 'refresh_token' }));
    t.equal(await introspectAsClient(second.refresh_token), inactive, 'the refresh token');
    t.equal(await introspectAsApi(second.access_token), inactive, 'the access token issued with it');
    t.equal(await introspectAsApi(first.access_token), inactive, 'the access token issued before it in the family');
    const answer = await refresh(second.refresh_token);
    t.equal(answer.status, 400);
    t.equal(answer.text, rejectedRefresh);
  });

  t.test('a rotated refresh token still names its family: revoking it revokes the live successor', async (t) => {
    const first = await login();
    const second = await refreshed(first);
    assertRevokedAnswer(t, await revoke(first.refresh_token));
    t.equal(await introspectAsClient(second.refresh_token), inactive);
    t.equal((await refresh(second.refresh_token)).text, rejectedRefresh);
  });

  t.test('revokes a JWT access token: inactive at introspection until it expires', async (t) => {
    const tokens = await login();
    assertRevokedAnswer(t, await revoke(tokens.access_token, 'app', { token_type_hint: 'access_token' }));
    t.equal(await introspectAsApi(tokens.access_token), inactive, 'as the API resource (what a token validator sees)');
    t.equal(await introspectAsClient(tokens.access_token), inactive, 'as its client');
  });

  t.test('honours token_type_hint but does not trust it', async (t) => {
    const a = await login();
    assertRevokedAnswer(
      t,
      await revoke(a.access_token, 'app', { token_type_hint: 'refresh_token' }),
      'an access token hinted as a refresh token',
    );
    t.equal(await introspectAsApi(a.access_token), inactive);
    const b = await login();
    assertRevokedAnswer(
      t,
      await revoke(b.refresh_token, 'app', { token_type_hint: 'access_token' }),
      'a refresh token hinted as an access token',
    );
    t.equal(await introspectAsClient(b.refresh_token), inactive);
    const c = await login();
    assertRevokedAnswer(t, await revoke(c.refresh_token, 'app', { token_type_hint: 'unsupported_kind' }), 'an unknown hint');
    t.equal(await introspectAsClient(c.refresh_token), inactive);
  });

  t.test('answers 200 with an empty body for unknown, garbage, expired and already revoked tokens', async (t) => {
    const revokedRefresh = await login();
    assertRevokedAnswer(t, await revoke(revokedRefresh.refresh_token));
    const revokedAccess = await login();
    assertRevokedAnswer(t, await revoke(revokedAccess.access_token));
    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({
      iss: gw.config.issuer,
      sub: 'sub-alice',
      aud: 'urn:api1',
      scope: 'api1',
      client_id: 'app',
      iat: now - 3700,
      nbf: now - 3700,
      exp: now - 100,
      jti: randomUUID(),
    })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: signingKey.kid })
      .sign(await importJWK(signingKey.jwk, 'ES256'));
    const cases = {
      'an unknown refresh handle': randomBytes(48).toString('base64url'),
      garbage: 'garbage',
      'three dots of garbage': 'a.b.c',
      'an expired access token': expired,
      'an already revoked refresh token': revokedRefresh.refresh_token,
      'an already revoked access token': revokedAccess.access_token,
      'a very long token': 'x'.repeat(40_000),
    };
    for (const [name, token] of Object.entries(cases)) {
      assertRevokedAnswer(t, await revoke(token), name);
      assertRevokedAnswer(t, await revoke(token, 'app', { token_type_hint: 'refresh_token' }), `${name}, hinted`);
    }
  });

  t.test("answers 200 to another client's token and leaves it alone", async (t) => {
    const tokens = await login();
    assertRevokedAnswer(t, await revoke(tokens.refresh_token, 'app2'), 'refresh token');
    assertRevokedAnswer(t, await revoke(tokens.access_token, 'app2'), 'access token');
    assertRevokedAnswer(t, await revoke(tokens.access_token, 'app2', { token_type_hint: 'refresh_token' }), 'access token, hinted');
    t.match(JSON.parse(await introspectAsClient(tokens.refresh_token)), { active: true });
    t.match(JSON.parse(await introspectAsApi(tokens.access_token)), { active: true });
    t.equal((await refresh(tokens.refresh_token)).status, 200, 'the refresh token still works');
  });

  t.test('lets a public client revoke its own tokens with client_id alone', async (t) => {
    const issued = await login('spa');
    const renewed = await post(gw.tokenUrl, { grant_type: 'refresh_token', refresh_token: issued.refresh_token, client_id: 'spa' });
    t.equal(renewed.status, 200, 'a public client refreshes with client_id alone');
    const first = JSON.parse(renewed.text) as Tokens;
    assertRevokedAnswer(t, await post(revocationUrl, { token: first.access_token, client_id: 'spa' }));
    t.equal(await introspectAsApi(first.access_token), inactive);
    assertRevokedAnswer(t, await post(revocationUrl, { token: first.refresh_token, client_id: 'spa' }));
    const answer = await post(gw.tokenUrl, { grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: 'spa' });
    t.equal(answer.text, rejectedRefresh);
    const other = await login();
    assertRevokedAnswer(t, await post(revocationUrl, { token: other.refresh_token, client_id: 'spa' }), "a confidential client's token");
    t.match(JSON.parse(await introspectAsClient(other.refresh_token)), { active: true }, 'is left alone');
  });

  t.test('works with openid-client', async (t) => {
    const config = await oidc.discovery(new URL(gw.config.issuer), 'app', undefined, oidc.ClientSecretBasic('secret'), {
      execute: [oidc.allowInsecureRequests],
    });
    const tokens = await login();
    await oidc.tokenRevocation(config, tokens.refresh_token, { token_type_hint: 'refresh_token' });
    t.same(await oidc.tokenIntrospection(config, tokens.refresh_token), { active: false });
    t.same(await oidc.tokenIntrospection(config, tokens.access_token), { active: false });
  });

  t.test('answers 400 invalid_request when token is missing or empty', async (t) => {
    for (const params of [{}, { token: '' }, { token_type_hint: 'refresh_token' }] as Record<string, string>[]) {
      const answer = await post(revocationUrl, params, basicAuthorization('app', 'secret'));
      t.equal(answer.status, 400, JSON.stringify(params));
      t.equal(answer.text, '{"error":"invalid_request","error_description":"The token parameter is missing."}');
      t.equal(answer.headers.get('cache-control'), 'no-store');
    }
  });

  t.test('answers 405 with Allow: POST to other methods', async (t) => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const res = await fetch(revocationUrl, { method, headers: { authorization: basicAuthorization('app', 'secret') } });
      t.equal(res.status, 405, method);
      t.equal(res.headers.get('allow'), 'POST');
      t.equal(await res.text(), '{"error":"invalid_request","error_description":"The revocation endpoint accepts POST only."}');
    }
  });

  t.test('refuses an unauthenticated caller with 401 and revokes nothing', async (t) => {
    const tokens = await login();
    const cases: [string, Record<string, string>, string | undefined, boolean][] = [
      ['no credentials', { token: tokens.refresh_token }, undefined, false],
      ['a wrong secret with Basic', { token: tokens.refresh_token }, basicAuthorization('app', 'wrong'), true],
      ['a wrong secret in the body', { token: tokens.refresh_token, client_id: 'app', client_secret: 'wrong' }, undefined, false],
      ['a confidential client without its secret', { token: tokens.refresh_token, client_id: 'app' }, undefined, false],
      ['an unknown client', { token: tokens.refresh_token }, basicAuthorization('nobody', 'secret'), true],
      ['an API resource', { token: tokens.access_token }, basicAuthorization('urn:api1', 'api1-secret'), true],
    ];
    for (const [name, params, authorization, challenged] of cases) {
      const answer = await post(revocationUrl, params, authorization);
      t.equal(answer.status, 401, name);
      t.equal(answer.text, invalidClient, name);
      t.equal(answer.headers.get('www-authenticate'), challenged ? `Basic realm="${gw.config.issuer}"` : null, name);
    }
    t.match(JSON.parse(await introspectAsClient(tokens.refresh_token)), { active: true });
    t.match(JSON.parse(await introspectAsApi(tokens.access_token)), { active: true });
  });

  t.test('answers 400 to a body that is not a form', async (t) => {
    const res = await fetch(revocationUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basicAuthorization('app', 'secret') },
      body: JSON.stringify({ token: 'x' }),
    });
    t.equal(res.status, 400);
    t.equal(await res.text(), '{"error":"invalid_request","error_description":"The request must be application/x-www-form-urlencoded."}');
  });
});
