// The shipped delegation validator (validators/delegation.ts), end to end: a real gateway on a
// real Redis, a user token from the password grant, openid-client as the middle-tier API, and
// jose as the back-end API that verifies the new token against the JWKS.
import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as oidc from 'openid-client';
import { createRemoteJWKSet, decodeJwt, generateKeyPair, importJWK, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import { generateSigningKey } from '../../gateway/keys/key_loader.js';
import { hashPassword } from '../../core/crypto/password_hash.js';
import { RedisStore } from '../../core/store/redis_store.js';
import { revokedJtiKey } from '../../core/records/family_revocation.js';
import { startRedisServer } from '../helpers/redis_server.js';
import { sha256Secret, startTestGateway, type TestGateway } from '../helpers/test_gateway.js';
import { basicAuthorization } from '../helpers/basic_authorization.js';

const validatorsDir = fileURLToPath(new URL('../../validators', import.meta.url));
const form = 'application/x-www-form-urlencoded';
const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

async function post(gw: TestGateway, clientId: string, params: Record<string, string>): Promise<Answer> {
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': form, authorization: basicAuthorization(clientId) },
    body: new URLSearchParams(params).toString(),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

function assertRefused(t: Test, r: Answer, body: Record<string, unknown> = { error: 'invalid_grant' }): void {
  t.equal(r.status, 400);
  t.equal(r.headers.get('cache-control'), 'no-store');
  t.equal(r.headers.get('pragma'), 'no-cache');
  t.same(r.body, body);
}

const alicePasswordHash = await hashPassword('alice-pw');

t.test('delegation', async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  if (redis.warning) t.comment(redis.warning);

  const keyDir = t.testdir({});
  const signingKey = await generateSigningKey('ES256');
  writeFileSync(path.join(keyDir, 'signing.jwk.json'), JSON.stringify(signingKey.jwk));
  const privateKey = await importJWK(signingKey.jwk, 'ES256');

  const client = (clientId: string, allowedGrantTypes: string[], allowedScopes: string[], extra: Record<string, unknown> = {}) => ({
    clientId,
    clientSecrets: [{ value: sha256Secret('secret') }],
    allowedGrantTypes,
    allowedScopes,
    ...extra,
  });
  const gw = await startTestGateway(t, {
    validatorsDir,
    watchValidators: false,
    patch: (raw) => {
      raw.store = { type: 'redis', url: redis.url, commandTimeoutMs: 1000 };
      raw.signing = { algorithm: 'ES256', keys: [{ file: path.join(keyDir, 'signing.jwk.json') }] };
      raw.users = [
        { subjectId: '818727', username: 'alice', passwordHash: alicePasswordHash },
        { subjectId: 'erin-corp', username: 'erin', passwordHash: alicePasswordHash, idp: 'corp', tenant: 'acme' },
      ];
      (raw.clients as unknown[]).push(
        client('frontend', ['password', 'client_credentials'], ['openid', 'profile', 'api1']),
        client('api1', ['delegation'], ['api2'], { audiences: ['urn:api1'] }),
        // The next hop: a service behind API 2 that delegates the delegated token again.
        client('backend', ['delegation'], ['api2'], { audiences: ['urn:api2'] }),
        // Allowed the grant, but it is no API any token was issued to.
        client('bystander', ['delegation'], ['api2']),
      );
    },
  });
  const issuer = gw.config.issuer;
  const jwks = createRemoteJWKSet(new URL(`${gw.url}/.well-known/openid-configuration/jwks`));
  const asApi2 = (token: string) => jwtVerify(token, jwks, { issuer, audience: 'urn:api2', typ: 'at+jwt' });
  const discover = (clientId: string) =>
    oidc.discovery(new URL(issuer), clientId, undefined, oidc.ClientSecretBasic('secret'), { execute: [oidc.allowInsecureRequests] });

  const frontend = await discover('frontend');
  const userToken = async () =>
    (await oidc.genericGrantRequest(frontend, 'password', { username: 'alice', password: 'alice-pw', scope: 'openid api1' })).access_token;

  /** A JWT signed with the gateway's own key, shaped as the test needs. */
  const mint = (payload: JWTPayload, header: Record<string, unknown> = {}) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      iss: issuer,
      sub: '818727',
      client_id: 'frontend',
      scope: 'openid api1',
      aud: 'urn:api1',
      auth_time: now,
      iat: now,
      nbf: now,
      exp: now + 600,
      jti: crypto.randomUUID(),
      ...payload,
    })
      .setProtectedHeader({ alg: 'ES256', kid: signingKey.kid, typ: 'at+jwt', ...header })
      .sign(privateKey);
  };

  t.test('accepts a token minted with the gateway key (the control for the refusals below)', async (t) => {
    const r = await post(gw, 'api1', { grant_type: 'delegation', token: await mint({}), scope: 'api2' });
    t.equal(r.status, 200);
    t.equal(decodeJwt(r.body.access_token as string).sub, '818727');
  });

  t.test('trades a user token for an api2 token that keeps sub and names the calling client in act', async (t) => {
    const api1 = await discover('api1');
    const userTokenUsed = await userToken();
    const tokens = await oidc.genericGrantRequest(api1, 'delegation', { token: userTokenUsed, scope: 'api2' });
    t.equal(tokens.token_type, 'bearer');
    t.equal(tokens.scope, 'api2');
    t.equal(tokens.expires_in, 3600);
    const { payload, protectedHeader } = await asApi2(tokens.access_token);
    t.equal(protectedHeader.typ, 'at+jwt');
    t.equal(payload.iss, issuer);
    t.equal(payload.aud, 'urn:api2');
    t.equal(payload.sub, '818727', "the user's sub is kept");
    t.equal(payload.scope, 'api2', 'only the requested scope');
    t.equal(payload.client_id, 'api1');
    t.same(payload.act, { client_id: 'api1' }, 'RFC 8693 §4.1');
    const original = decodeJwt(userTokenUsed);
    t.same(payload.amr, original.amr, "the user's sign-in is kept: amr");
    t.equal(payload.auth_time, original.auth_time, 'auth_time');
    t.equal(payload.idp, original.idp, 'idp');
  });

  t.test("keeps the user's identity provider, tenant and sign-in time", async (t) => {
    const erin = (
      await oidc.genericGrantRequest(frontend, 'password', {
        username: 'erin',
        password: 'alice-pw',
        scope: 'api1',
        acr_values: 'idp:corp tenant:acme',
      })
    ).access_token;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const api1 = await discover('api1');
    const { payload } = await asApi2((await oidc.genericGrantRequest(api1, 'delegation', { token: erin, scope: 'api2' })).access_token);
    const original = decodeJwt(erin);
    t.equal(payload.sub, 'erin-corp');
    t.equal(payload.idp, 'corp', 'not "local"');
    t.equal(payload.tenant, 'acme', 'the tenant is kept');
    t.equal(payload.auth_time, original.auth_time, 'the time of the sign-in, not of the exchange');
  });

  t.test("refuses a client-only token: it is no user's (RFC 9068 §5)", async (t) => {
    const cc = (await oidc.clientCredentialsGrant(frontend, { scope: 'api1' })).access_token;
    t.equal(decodeJwt(cc).sub, 'frontend', "a client_credentials token's sub is the client id");
    assertRefused(t, await post(gw, 'api1', { grant_type: 'delegation', token: cc, scope: 'api2' }));
  });

  t.test('refuses a token issued for an API the calling client is not', async (t) => {
    assertRefused(t, await post(gw, 'bystander', { grant_type: 'delegation', token: await userToken(), scope: 'api2' }));
    assertRefused(t, await post(gw, 'api1', { grant_type: 'delegation', token: await mint({ aud: 'urn:api2' }), scope: 'api2' }));
  });

  t.test('honours may_act (RFC 8693 §4.4)', async (t) => {
    const forApi1 = await post(gw, 'api1', {
      grant_type: 'delegation',
      token: await mint({ may_act: { client_id: 'api1' } }),
      scope: 'api2',
    });
    t.equal(forApi1.status, 200, 'may_act naming the caller');
    assertRefused(
      t,
      await post(gw, 'api1', { grant_type: 'delegation', token: await mint({ may_act: { client_id: 'other' } }), scope: 'api2' }),
    );
  });

  t.test('nests the act of a token that was itself delegated, so the call path stays visible', async (t) => {
    const api1 = await discover('api1');
    const first = await oidc.genericGrantRequest(api1, 'delegation', { token: await userToken(), scope: 'api2' });
    const backend = await discover('backend');
    const second = await oidc.genericGrantRequest(backend, 'delegation', { token: first.access_token, scope: 'api2' });
    const { payload } = await asApi2(second.access_token);
    t.equal(payload.sub, '818727');
    t.equal(payload.client_id, 'backend');
    t.same(payload.act, { client_id: 'backend', act: { client_id: 'api1' } });
  });

  t.test('grants the client its allowed scope when scope is omitted', async (t) => {
    const r = await post(gw, 'api1', { grant_type: 'delegation', token: await userToken() });
    t.equal(r.status, 200);
    t.equal(r.body.scope, 'api2');
  });

  t.test('surfaces a refusal to openid-client as an OAuth error', async (t) => {
    const api1 = await discover('api1');
    const refused: unknown = await oidc.genericGrantRequest(api1, 'delegation', { token: 'garbage', scope: 'api2' }).then(
      () => 'resolved',
      (e: unknown) => e,
    );
    t.match(refused, { code: 'OAUTH_RESPONSE_BODY_ERROR', error: 'invalid_grant', status: 400 });
  });

  t.test('refuses a missing or empty token as invalid_grant', async (t) => {
    assertRefused(t, await post(gw, 'api1', { grant_type: 'delegation', scope: 'api2' }));
    assertRefused(t, await post(gw, 'api1', { grant_type: 'delegation', token: '', scope: 'api2' }));
  });

  t.test('refuses a token that is not a JWT as invalid_grant', async (t) => {
    assertRefused(t, await post(gw, 'api1', { grant_type: 'delegation', token: 'not-a-jwt', scope: 'api2' }));
    assertRefused(t, await post(gw, 'api1', { grant_type: 'delegation', token: 'a.b.c', scope: 'api2' }));
  });

  t.test('refuses an expired token as invalid_grant', async (t) => {
    const now = Math.floor(Date.now() / 1000);
    const expired = await mint({ iat: now - 3660, nbf: now - 3660, exp: now - 60 });
    assertRefused(t, await post(gw, 'api1', { grant_type: 'delegation', token: expired, scope: 'api2' }));
  });

  t.test('refuses a token that is not valid yet as invalid_grant', async (t) => {
    const now = Math.floor(Date.now() / 1000);
    assertRefused(t, await post(gw, 'api1', { grant_type: 'delegation', token: await mint({ nbf: now + 120 }), scope: 'api2' }));
  });

  t.test('refuses a token whose iat is in the future beyond the clock tolerance as invalid_grant', async (t) => {
    const now = Math.floor(Date.now() / 1000);
    assertRefused(t, await post(gw, 'api1', { grant_type: 'delegation', token: await mint({ iat: now + 120 }), scope: 'api2' }));
    const skewed = await post(gw, 'api1', { grant_type: 'delegation', token: await mint({ iat: now + 2 }), scope: 'api2' });
    t.equal(skewed.status, 200, 'a few seconds of skew between instances is tolerated');
  });

  t.test('refuses a token of another issuer, signed with its own key, as invalid_grant', async (t) => {
    const other = await generateKeyPair('ES256');
    const now = Math.floor(Date.now() / 1000);
    const foreign = await new SignJWT({ sub: '818727', client_id: 'frontend', scope: 'api1', jti: crypto.randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: 'other-key', typ: 'at+jwt' })
      .setIssuer('https://other.example')
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(other.privateKey);
    assertRefused(t, await post(gw, 'api1', { grant_type: 'delegation', token: foreign, scope: 'api2' }));
    // Same issuer name and kid, another key: the signature does not verify.
    const forged = await new SignJWT({
      iss: issuer,
      sub: '818727',
      client_id: 'frontend',
      scope: 'api1',
      iat: now,
      exp: now + 600,
      jti: crypto.randomUUID(),
    })
      .setProtectedHeader({ alg: 'ES256', kid: signingKey.kid, typ: 'at+jwt' })
      .sign(other.privateKey);
    assertRefused(t, await post(gw, 'api1', { grant_type: 'delegation', token: forged, scope: 'api2' }));
  });

  t.test('refuses a token signed with the gateway key but naming another issuer as invalid_grant', async (t) => {
    assertRefused(
      t,
      await post(gw, 'api1', { grant_type: 'delegation', token: await mint({ iss: 'https://other.example' }), scope: 'api2' }),
    );
  });

  t.test('refuses an ID-token-typed JWT signed with the gateway key as invalid_grant', async (t) => {
    const idToken = await mint({ aud: 'frontend', nonce: 'n-0S6_WzA2Mj' }, { typ: 'JWT' });
    assertRefused(t, await post(gw, 'api1', { grant_type: 'delegation', token: idToken, scope: 'api2' }));
  });

  t.test('refuses an unsigned (alg none) token as invalid_grant', async (t) => {
    const genuine = decodeJwt(await userToken());
    const unsigned = `${b64url({ alg: 'none', typ: 'at+jwt' })}.${b64url(genuine)}.`;
    assertRefused(t, await post(gw, 'api1', { grant_type: 'delegation', token: unsigned, scope: 'api2' }));
  });

  t.test('refuses an HS256 token keyed with the public key as invalid_grant', async (t) => {
    const publicJwk = { kty: signingKey.jwk.kty, crv: signingKey.jwk.crv, x: signingKey.jwk.x, y: signingKey.jwk.y };
    const now = Math.floor(Date.now() / 1000);
    const confused = await new SignJWT({
      iss: issuer,
      sub: '818727',
      client_id: 'frontend',
      scope: 'api1',
      iat: now,
      exp: now + 600,
      jti: crypto.randomUUID(),
    })
      .setProtectedHeader({ alg: 'HS256', kid: signingKey.kid, typ: 'at+jwt' })
      .sign(new TextEncoder().encode(JSON.stringify(publicJwk)));
    assertRefused(t, await post(gw, 'api1', { grant_type: 'delegation', token: confused, scope: 'api2' }));
  });

  t.test('refuses a revoked token (its jti on the deny list) as invalid_grant', async (t) => {
    const token = await userToken();
    t.equal((await post(gw, 'api1', { grant_type: 'delegation', token, scope: 'api2' })).status, 200, 'accepted before revocation');
    const store = new RedisStore({ url: redis.url });
    t.teardown(() => store.close());
    await store.set(revokedJtiKey(decodeJwt(token).jti as string), { revokedAt: Date.now() }, 60_000);
    assertRefused(t, await post(gw, 'api1', { grant_type: 'delegation', token, scope: 'api2' }));
  });

  t.test(
    'answers 503 with Retry-After while the store is down, while client_credentials keeps working',
    { skip: !redis.managed && 'the Redis is not ours to stop' },
    async (t) => {
      const token = await userToken();
      await redis.stop();
      t.teardown(() => redis.start());
      const r = await post(gw, 'api1', { grant_type: 'delegation', token, scope: 'api2' });
      t.equal(r.status, 503);
      t.equal(r.headers.get('cache-control'), 'no-store');
      t.equal(r.headers.get('retry-after'), '2');
      t.same(r.body, { error: 'temporarily_unavailable', error_description: 'The service is temporarily unavailable. Retry later.' });
      const cc = await post(gw, 'm2m', { grant_type: 'client_credentials', scope: 'api2' });
      t.equal(cc.status, 200, 'client_credentials needs no store');
    },
  );
});
