// `POST /connect/introspect` (RFC 7662) over HTTP: who may ask, what each caller sees, and that
// everything else is exactly `{"active":false}` (gateway/endpoints/introspection_endpoint.ts,
// workers/endpoints/introspection.ts).
import t, { type Test } from 'tap';
import { randomBytes, randomUUID } from 'node:crypto';
import * as oidc from 'openid-client';
import { decodeJwt, importJWK, SignJWT, type JWTPayload } from 'jose';
import { generateSigningKey } from '../../../gateway/keys/key_loader.js';
import { sha256Secret, startTestGateway, writeSigningKey } from '../../helpers/test_gateway.js';
import { addPasswordFixtures, offlineUserClient, passwordFixtures } from '../../helpers/password_users.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';

const fixtures = await passwordFixtures();
const form = 'application/x-www-form-urlencoded';
const inactive = '{"active":false}';
const invalidClient = '{"error":"invalid_client","error_description":"Client authentication failed."}';

const userClient = offlineUserClient;

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

t.test('introspection endpoint', async (t) => {
  const { key: signingKey, signing } = await writeSigningKey(t);
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      addPasswordFixtures(raw, fixtures);
      raw.signing = signing;
      raw.throttling = { clientAuthentication: { maxFailures: 1000, windowSeconds: 60 } };
      raw.apiResources = [
        { name: 'urn:api1', scopes: ['api1'], secrets: [{ value: sha256Secret('api1-secret') }] },
        { name: 'urn:api2', scopes: ['api2'], secrets: [{ value: sha256Secret('api2-secret') }] },
      ];
      (raw.clients as unknown[]).push(
        userClient('app'),
        userClient('app2'),
        userClient('spa', { requireClientSecret: false, clientSecrets: [] }),
        // A client whose id is also an API resource's name, with another secret than the resource's.
        userClient('urn:api2'),
      );
    },
  });
  const introspectUrl = `${gw.url}/connect/introspect`;

  async function introspect(params: Record<string, string>, authorization?: string): Promise<Answer> {
    const res = await fetch(introspectUrl, {
      method: 'POST',
      headers: { 'content-type': form, ...(authorization ? { authorization } : {}) },
      body: new URLSearchParams(params).toString(),
    });
    return { status: res.status, headers: res.headers, text: await res.text() };
  }
  const asApi1 = (token: string, extra: Record<string, string> = {}) =>
    introspect({ token, ...extra }, basicAuthorization('urn:api1', 'api1-secret'));
  const asClient = (token: string, clientId = 'app', extra: Record<string, string> = {}) =>
    introspect({ token, ...extra }, basicAuthorization(clientId, 'secret'));

  async function login(clientId = 'app', scope = 'api1 api2 offline_access'): Promise<{ access_token: string; refresh_token: string }> {
    const res = await fetch(gw.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': form, authorization: basicAuthorization(clientId, 'secret') },
      body: new URLSearchParams({ grant_type: 'password', username: 'alice', password: 'alice-pw', scope }).toString(),
    });
    const body = (await res.json()) as { access_token: string; refresh_token: string };
    if (res.status !== 200) throw new Error(`login failed: ${JSON.stringify(body)}`);
    return body;
  }

  /** An access token signed with the gateway's own key; `overrides` replace any claim. */
  async function signed(overrides: JWTPayload): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const payload: JWTPayload = {
      iss: gw.config.issuer,
      sub: 'sub-alice',
      aud: 'urn:api1',
      scope: 'api1',
      client_id: 'app',
      iat: now - 120,
      nbf: now - 120,
      exp: now + 3600,
      jti: randomUUID(),
      ...overrides,
    };
    return new SignJWT(payload)
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: signingKey.kid })
      .sign(await importJWK(signingKey.jwk, 'ES256'));
  }

  function assertInactive(t: Test, answer: Answer, message = 'exactly {"active":false}'): void {
    t.equal(answer.status, 200, message);
    t.equal(answer.text, inactive, message);
    t.equal(answer.headers.get('cache-control'), 'no-store');
  }

  t.test('an API resource sees an access token whose aud includes it, with every RFC 7662 member', async (t) => {
    const { access_token } = await login();
    const answer = await asApi1(access_token);
    t.equal(answer.status, 200);
    t.match(answer.headers.get('content-type'), /^application\/json/);
    t.equal(answer.headers.get('cache-control'), 'no-store');
    t.equal(answer.headers.get('pragma'), 'no-cache');
    const body = JSON.parse(answer.text) as Record<string, unknown>;
    const claims = decodeJwt(access_token);
    t.match(body, {
      active: true,
      token_type: 'Bearer',
      // Only the caller's own scopes: not api2's, not offline_access (IdentityServer does the same).
      scope: 'api1',
      client_id: 'app',
      sub: 'sub-alice',
      aud: ['urn:api1', 'urn:api2'],
      iss: gw.config.issuer,
      exp: claims.exp,
      iat: claims.iat,
      nbf: claims.nbf,
      jti: claims.jti,
    });
    for (const member of ['scope', 'client_id', 'sub', 'aud', 'iss', 'exp', 'iat', 'nbf', 'jti', 'token_type']) {
      t.ok(member in body, `has ${member}`);
    }
    t.same(body, { active: true, token_type: 'Bearer', ...claims, scope: 'api1' }, 'the token claims, scope narrowed, nothing invented');
    t.equal(claims.scope, 'api1 api2 offline_access', 'the token itself carries every scope');
    const asApi2 = JSON.parse((await introspect({ token: access_token }, basicAuthorization('urn:api2', 'api2-secret'))).text) as {
      scope?: unknown;
    };
    t.equal(asApi2.scope, 'api2', 'the other API sees only its own scope');
    const asOwner = JSON.parse((await asClient(access_token)).text) as { scope?: unknown };
    t.equal(asOwner.scope, 'api1 api2 offline_access', 'the client that holds the token sees all of it');
  });

  t.test('an API resource gets exactly {"active":false} for a token of another audience', async (t) => {
    const { access_token } = await login('app', 'api2 offline_access');
    assertInactive(t, await asApi1(access_token));
    t.match(JSON.parse((await introspect({ token: access_token }, basicAuthorization('urn:api2', 'api2-secret'))).text), {
      active: true,
      aud: 'urn:api2',
    });
  });

  t.test('an API resource never sees refresh tokens', async (t) => {
    const { refresh_token } = await login();
    assertInactive(t, await asApi1(refresh_token));
    assertInactive(t, await asApi1(refresh_token, { token_type_hint: 'refresh_token' }));
  });

  t.test('a client sees its own access and refresh tokens', async (t) => {
    const { access_token, refresh_token } = await login();
    t.match(JSON.parse((await asClient(access_token)).text), {
      active: true,
      client_id: 'app',
      token_type: 'Bearer',
      jti: decodeJwt(access_token).jti,
    });
    const refresh = JSON.parse((await asClient(refresh_token)).text) as Record<string, unknown>;
    t.match(refresh, { active: true, token_type: 'refresh_token', client_id: 'app', sub: 'sub-alice', scope: 'api1 api2 offline_access' });
    t.type(refresh.exp, 'number');
    t.type(refresh.iat, 'number');
  });

  t.test('a client gets exactly {"active":false} for another client\'s tokens', async (t) => {
    const { access_token, refresh_token } = await login();
    assertInactive(t, await asClient(access_token, 'app2'), 'access token');
    assertInactive(t, await asClient(refresh_token, 'app2'), 'refresh token');
  });

  t.test('token_type_hint orders the lookup but is not trusted', async (t) => {
    const { access_token, refresh_token } = await login();
    t.match(JSON.parse((await asClient(access_token, 'app', { token_type_hint: 'refresh_token' })).text), {
      active: true,
      token_type: 'Bearer',
    });
    t.match(JSON.parse((await asClient(refresh_token, 'app', { token_type_hint: 'access_token' })).text), {
      active: true,
      token_type: 'refresh_token',
    });
    t.match(JSON.parse((await asClient(access_token, 'app', { token_type_hint: 'something_else' })).text), { active: true });
  });

  t.test('an expired access token is exactly {"active":false}', async (t) => {
    const now = Math.floor(Date.now() / 1000);
    // Past the 5 s clock tolerance.
    const expired = await signed({ exp: now - 30, iat: now - 3630, nbf: now - 3630 });
    const live = await signed({});
    t.match(
      JSON.parse((await asApi1(live)).text),
      { active: true, sub: 'sub-alice' },
      'the same token unexpired is active: the key is trusted',
    );
    assertInactive(t, await asApi1(expired));
    assertInactive(t, await asClient(expired));
  });

  t.test('a revoked access token and a revoked refresh token are exactly {"active":false}', async (t) => {
    const { access_token, refresh_token } = await login();
    const revoke = (token: string) =>
      fetch(`${gw.url}/connect/revocation`, {
        method: 'POST',
        headers: { 'content-type': form, authorization: basicAuthorization('app', 'secret') },
        body: new URLSearchParams({ token }).toString(),
      });
    t.equal((await revoke(access_token)).status, 200);
    assertInactive(t, await asApi1(access_token));
    assertInactive(t, await asClient(access_token));
    t.match(JSON.parse((await asClient(refresh_token)).text), { active: true }, 'revoking an access token leaves its refresh token');
    t.equal((await revoke(refresh_token)).status, 200);
    assertInactive(t, await asClient(refresh_token));
  });

  t.test('a consumed (rotated) refresh token is exactly {"active":false}', async (t) => {
    const { refresh_token } = await login();
    const res = await fetch(gw.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': form, authorization: basicAuthorization('app', 'secret') },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token }).toString(),
    });
    const rotated = (await res.json()) as { refresh_token: string };
    assertInactive(t, await asClient(refresh_token));
    t.match(JSON.parse((await asClient(rotated.refresh_token)).text), { active: true });
  });

  t.test('unknown and garbage tokens are exactly {"active":false}', async (t) => {
    const foreignKey = await generateSigningKey('ES256');
    const now = Math.floor(Date.now() / 1000);
    const foreign = await new SignJWT({ scope: 'api1', client_id: 'app', sub: 'sub-alice', aud: 'urn:api1', jti: randomUUID() })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: signingKey.kid })
      .setIssuer(gw.config.issuer)
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(await importJWK(foreignKey.jwk, 'ES256'));
    const { access_token } = await login();
    const [header, payload] = access_token.split('.');
    const cases = {
      'an unknown refresh handle': randomBytes(48).toString('base64url'),
      'a JWT signed by another key': foreign,
      'a JWT with its signature swapped': `${header}.${payload}.${foreign.split('.')[2]}`,
      'an unsigned JWT': `${Buffer.from('{"alg":"none","typ":"at+jwt"}').toString('base64url')}.${payload}.`,
      garbage: 'garbage',
      'three dots of garbage': 'a.b.c',
      'a very long token': 'x'.repeat(40_000),
    };
    for (const [name, token] of Object.entries(cases)) {
      assertInactive(t, await asApi1(token), `${name} (API resource)`);
      assertInactive(t, await asClient(token), `${name} (client)`);
    }
  });

  t.test('openid-client introspects as an API resource with Basic', async (t) => {
    const { access_token } = await login();
    const config = await oidc.discovery(new URL(gw.config.issuer), 'urn:api1', undefined, oidc.ClientSecretBasic('api1-secret'), {
      execute: [oidc.allowInsecureRequests],
    });
    t.match(await oidc.tokenIntrospection(config, access_token), { active: true, sub: 'sub-alice', client_id: 'app' });
    t.same(await oidc.tokenIntrospection(config, 'garbage'), { active: false });
  });

  t.test('openid-client introspects as an API resource with its default, client_secret_post, which discovery advertises', async (t) => {
    const { access_token } = await login();
    // A client secret and no method: openid-client puts client_id and client_secret in the body.
    const config = await oidc.discovery(new URL(gw.config.issuer), 'urn:api1', 'api1-secret', undefined, {
      execute: [oidc.allowInsecureRequests],
    });
    t.ok(config.serverMetadata().introspection_endpoint_auth_methods_supported?.includes('client_secret_post'));
    t.match(await oidc.tokenIntrospection(config, access_token), {
      active: true,
      sub: 'sub-alice',
      client_id: 'app',
      aud: ['urn:api1', 'urn:api2'],
    });
  });

  t.test('an API resource in the body is held to one method', async (t) => {
    const { access_token } = await login();
    const withAssertion = await introspect({
      token: access_token,
      client_id: 'urn:api1',
      client_secret: 'api1-secret',
      client_assertion: 'x.y.z',
    });
    t.equal(withAssertion.status, 400);
    t.match(JSON.parse(withAssertion.text), { error: 'invalid_request' });
  });

  t.test('refuses an unauthenticated caller with 401', async (t) => {
    const { access_token } = await login();
    const cases: [string, Record<string, string>, string | undefined, boolean][] = [
      ['no credentials', { token: access_token }, undefined, false],
      ['an API resource with a wrong secret', { token: access_token }, basicAuthorization('urn:api1', 'wrong'), true],
      ["an API resource with another resource's secret", { token: access_token }, basicAuthorization('urn:api1', 'api2-secret'), true],
      ['a client with a wrong secret', { token: access_token }, basicAuthorization('app', 'wrong'), true],
      ['an unknown caller', { token: access_token }, basicAuthorization('nobody', 'secret'), true],
      ['a client with a wrong secret in the body', { token: access_token, client_id: 'app', client_secret: 'wrong' }, undefined, false],
      [
        'an API resource with a wrong secret in the body',
        { token: access_token, client_id: 'urn:api1', client_secret: 'wrong' },
        undefined,
        false,
      ],
    ];
    for (const [name, params, authorization, challenged] of cases) {
      const answer = await introspect(params, authorization);
      t.equal(answer.status, 401, name);
      t.equal(answer.text, invalidClient, name);
      t.equal(answer.headers.get('www-authenticate'), challenged ? `Basic realm="${gw.config.issuer}"` : null, name);
    }
  });

  t.test('an API resource that authenticated before is still held to one method and to its secret', async (t) => {
    const { access_token } = await login();
    t.equal((await asApi1(access_token)).status, 200);
    t.equal((await asApi1(access_token)).status, 200, 'again, from the remembered header');
    const twoMethods = await asApi1(access_token, { client_secret: 'api1-secret' });
    t.equal(twoMethods.status, 401, 'a remembered header with a secret in the body is refused');
    t.equal(twoMethods.text, invalidClient);
    const wrong = await introspect({ token: access_token }, basicAuthorization('urn:api1', 'not-the-secret'));
    t.equal(wrong.status, 401, 'another secret for the same resource is checked, and refused');
    t.equal(wrong.text, invalidClient);
  });

  t.test('a client remembered from its last request introspects again without a second check, never as a resource', async (t) => {
    const { access_token } = await login();
    t.match(JSON.parse((await asClient(access_token)).text), { active: true, client_id: 'app' });
    t.match(JSON.parse((await asClient(access_token)).text), { active: true, client_id: 'app' }, 'again, from memory');
    const twoMethods = await asClient(access_token, 'app', { client_secret: 'secret' });
    t.equal(twoMethods.status, 400, 'a remembered header with a secret in the body is still two methods');
    // urn:api2 authenticates as a client at the token endpoint, which remembers its header; at
    // introspection the name is the resource's first, whose secret this is not.
    await login('urn:api2');
    const asNamesake = await introspect({ token: access_token }, basicAuthorization('urn:api2', 'secret'));
    t.equal(asNamesake.status, 401);
    t.equal(asNamesake.text, invalidClient);
  });

  t.test('refuses a public client with 401 (RFC 7662 §2.1)', async (t) => {
    const { access_token } = await login();
    const answer = await introspect({ token: access_token, client_id: 'spa' });
    t.equal(answer.status, 401);
    t.equal(answer.text, invalidClient);
  });

  t.test('answers 400 invalid_request when token is missing or empty', async (t) => {
    for (const authorization of [basicAuthorization('urn:api1', 'api1-secret'), basicAuthorization('app', 'secret')]) {
      for (const params of [{}, { token: '' }, { token_type_hint: 'access_token' }] as Record<string, string>[]) {
        const answer = await introspect(params, authorization);
        t.equal(answer.status, 400, JSON.stringify(params));
        t.equal(answer.text, '{"error":"invalid_request","error_description":"The token parameter is missing."}');
      }
    }
  });

  t.test('answers 405 with Allow: POST to other methods', async (t) => {
    const res = await fetch(introspectUrl, { method: 'GET', headers: { authorization: basicAuthorization('urn:api1', 'api1-secret') } });
    t.equal(res.status, 405);
    t.equal(res.headers.get('allow'), 'POST');
    t.equal(await res.text(), '{"error":"invalid_request","error_description":"The introspection endpoint accepts POST only."}');
  });

  t.test('discovery lists introspection and revocation with their authentication methods', async (t) => {
    const document = (await (await fetch(`${gw.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    t.equal(document.introspection_endpoint, `${gw.config.issuer}/connect/introspect`);
    t.equal(document.revocation_endpoint, `${gw.config.issuer}/connect/revocation`);
    t.same(document.introspection_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post', 'private_key_jwt']);
    t.same(document.revocation_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none']);
    t.ok((document.grant_types_supported as string[]).includes('refresh_token'));
    t.ok((document.scopes_supported as string[]).includes('offline_access'));
  });
});
