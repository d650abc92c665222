// DPoP end to end (RFC 9449; docs/endpoints.md "DPoP: sender-constrained tokens"): unmodified
// openid-client with its DPoP handle (client credentials, the code flow, refresh, UserInfo, a
// server nonce it retries on by itself) against two gateways sharing a private redis-server; a
// resource server written with jose that checks the binding as an API would; and the replay
// cache and the nonces shared by both gateways; delegation and token exchange of a bound user token.
// The single-gateway rejections are in
// test/gateway/endpoints/dpop_token_endpoint.test.ts and test/gateway/endpoints/userinfo_endpoint_dpop.test.ts.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import * as oidc from 'openid-client';
import { calculateJwkThumbprint, createRemoteJWKSet, decodeJwt, EmbeddedJWK, exportJWK, jwtVerify, type JWK } from 'jose';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';
import { sha256Secret, startTestGateway } from '../helpers/test_gateway.js';
import { addPasswordFixtures, passwordFixtures } from '../helpers/password_users.js';
import { startRedisServer } from '../helpers/redis_server.js';
import { BrowserSession } from '../helpers/browser_session.js';
import { callbackUri, codeFlowClient } from '../helpers/authorize_flow.js';
import { dpopKey, dpopProof } from '../helpers/dpop_proof.js';
import { releaseAtOnce } from '../helpers/release_at_once.js';
import { basicAuthorization } from '../helpers/basic_authorization.js';

const fixtures = await passwordFixtures();
const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);

const patch = (raw: Record<string, unknown>) => {
  addPasswordFixtures(raw, fixtures);
  raw.store = { type: 'redis', url: redis.url, commandTimeoutMs: 1000 };
  (raw.clients as unknown[]).push(codeFlowClient('web'), codeFlowClient('native', { requireClientSecret: false, clientSecrets: [] }), {
    ...codeFlowClient('nonce-web'),
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['api1'],
    requireDPoPNonce: true,
  });
};
const gw = await startTestGateway(t, { patch });
// The second gateway publishes the first one's issuer, as two gateways behind one load balancer
// do: a proof names the same htu at either.
const gw2 = await startTestGateway(t, {
  patch: (raw) => {
    patch(raw);
    raw.issuer = gw.config.issuer;
  },
});

const discover = (gateway: typeof gw, clientId: string, auth: oidc.ClientAuth) =>
  oidc.discovery(new URL(gateway.config.issuer), clientId, undefined, auth, { execute: [oidc.allowInsecureRequests] });

// A resource server as an API would write it: verify the access token, then the proof of this
// request, and that the proof's key is the one the token is bound to.
const jwks = createRemoteJWKSet(new URL(`${gw.url}/.well-known/openid-configuration/jwks`));
const resource = createServer((req, res) => {
  void (async () => {
    try {
      const [scheme, token] = (req.headers.authorization ?? '').split(' ');
      if (scheme !== 'DPoP' || token === undefined) throw new Error('not the DPoP scheme');
      const { payload } = await jwtVerify(token, jwks, { issuer: gw.config.issuer, typ: 'at+jwt' });
      const proof = await jwtVerify(String(req.headers.dpop), EmbeddedJWK, { typ: 'dpop+jwt', algorithms: ['ES256', 'EdDSA'] });
      const thumbprint = await calculateJwkThumbprint(proof.protectedHeader.jwk as JWK, 'sha256');
      const ath = createHash('sha256').update(token).digest('base64url');
      const bound = (payload.cnf as { jkt?: string } | undefined)?.jkt;
      const ok = bound === thumbprint && proof.payload.ath === ath && proof.payload.htm === req.method;
      res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' }).end(JSON.stringify({ ok, sub: payload.sub }));
    } catch (err) {
      res.writeHead(401).end(JSON.stringify({ ok: false, error: String(err) }));
    }
  })();
});
await new Promise<void>((resolve) => resource.listen(0, '127.0.0.1', resolve));
t.teardown(() => resource.close());
const resourceUrl = new URL(`http://127.0.0.1:${(resource.address() as AddressInfo).port}/api`);

t.test('openid-client: client credentials with a DPoP handle, and an API that checks the binding with jose', async (t) => {
  const config = await discover(gw, 'm2m', oidc.ClientSecretBasic('secret'));
  t.same(config.serverMetadata().dpop_signing_alg_values_supported, ['ES256', 'ES384', 'EdDSA', 'RS256', 'PS256']);
  const keyPair = await oidc.randomDPoPKeyPair('ES256');
  const DPoP = oidc.getDPoPHandle(config, keyPair);
  const tokens = await oidc.clientCredentialsGrant(config, { scope: 'api1' }, { DPoP });
  t.equal(tokens.token_type.toLowerCase(), 'dpop');

  const api = await oidc.fetchProtectedResource(config, tokens.access_token, resourceUrl, 'GET', undefined, undefined, { DPoP });
  t.same([api.status, await api.json()], [200, { ok: true, sub: 'm2m' }], 'the API finds cnf.jkt = the thumbprint of the proof key');

  // Another key's proofs with the stolen token: the API refuses it.
  const thief = oidc.getDPoPHandle(config, await oidc.randomDPoPKeyPair('EdDSA'));
  const stolen = await oidc.fetchProtectedResource(config, tokens.access_token, resourceUrl, 'GET', undefined, undefined, { DPoP: thief });
  t.equal(stolen.status, 401);
});

t.test('openid-client: the code flow, UserInfo and refresh with one DPoP key; a public client needs the same key to refresh', async (t) => {
  for (const [clientId, auth] of [
    ['web', oidc.ClientSecretBasic('secret')],
    ['native', oidc.None()],
  ] as const) {
    const config = await discover(gw, clientId, auth);
    const DPoP = oidc.getDPoPHandle(config, await oidc.randomDPoPKeyPair('ES256'));
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: callbackUri,
      scope: 'openid profile api1 offline_access',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state: 'st',
    });
    const browser = new BrowserSession();
    const login = await browser.get(url.href);
    const consent = await browser.post(`${gw.url}/connect/authorize/login`, {
      csrf_token: login.hidden('csrf_token'),
      request: login.hidden('request'),
      username: 'alice',
      password: 'alice-pw',
    });
    const callback = await browser.post(`${gw.url}/connect/authorize/consent`, {
      csrf_token: consent.hidden('csrf_token'),
      interaction: consent.hidden('interaction'),
      decision: 'allow',
    });
    const tokens = await oidc.authorizationCodeGrant(
      config,
      new URL(callback.location as string),
      { pkceCodeVerifier: verifier, expectedState: 'st' },
      undefined,
      { DPoP },
    );
    t.equal(tokens.token_type.toLowerCase(), 'dpop', clientId);
    const userInfo = await oidc.fetchUserInfo(config, tokens.access_token, 'sub-alice', { DPoP });
    t.same(userInfo, { sub: 'sub-alice', name: 'Alice' }, `${clientId}: UserInfo with the DPoP scheme`);
    await t.rejects(
      oidc.fetchUserInfo(config, tokens.access_token, 'sub-alice'),
      `${clientId}: the bound token as a bearer token is refused`,
    );

    const other = oidc.getDPoPHandle(config, await oidc.randomDPoPKeyPair('ES256'));
    if (clientId === 'native') {
      const refused = await oidc.refreshTokenGrant(config, tokens.refresh_token as string, undefined, { DPoP: other }).then(
        () => undefined,
        (err: unknown) => err as { error?: string; error_description?: string },
      );
      t.same(
        [refused?.error, refused?.error_description],
        ['invalid_grant', 'The refresh token is bound to another DPoP key.'],
        'a public client refreshing with another key',
      );
    }
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string, undefined, { DPoP });
    t.equal(refreshed.token_type.toLowerCase(), 'dpop', `${clientId}: refreshed`);
    const again = await oidc.fetchUserInfo(config, refreshed.access_token, 'sub-alice', { DPoP });
    t.equal(again.sub, 'sub-alice');
  }
});

t.test('openid-client retries on use_dpop_nonce by itself; a nonce from one gateway is good at the other', async (t) => {
  const config = await discover(gw, 'nonce-web', oidc.ClientSecretBasic('secret'));
  const DPoP = oidc.getDPoPHandle(config, await oidc.randomDPoPKeyPair('ES256'));
  const tokens = await oidc.clientCredentialsGrant(config, { scope: 'api1' }, { DPoP });
  t.equal(tokens.token_type.toLowerCase(), 'dpop');

  const key = await dpopKey();
  const ask = async (gateway: typeof gw, nonce?: string) => {
    const res = await fetch(gateway.tokenUrl, {
      method: 'POST',
      headers: {
        authorization: basicAuthorization('nonce-web', 'secret'),
        'content-type': 'application/x-www-form-urlencoded',
        dpop: await dpopProof(key, { htu: gw.tokenUrl, ...(nonce ? { nonce } : {}) }),
      },
      body: 'grant_type=client_credentials&scope=api1',
    });
    return { status: res.status, nonce: res.headers.get('dpop-nonce') };
  };
  const first = await ask(gw);
  t.equal(first.status, 400);
  t.ok(first.nonce);
  const atOther = await ask(gw2, first.nonce as string);
  t.equal(atOther.status, 200, 'the other gateway derived the same nonce key from the shared page secret');
});

t.test('a proof sent to both gateways at once is accepted once: the jti cache is the shared store', async (t) => {
  const key = await dpopKey();
  const body = 'grant_type=client_credentials&scope=api1';
  const request = (proof: string) =>
    Buffer.from(
      `POST /connect/token HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basicAuthorization('m2m', 'secret')}\r\n` +
        `Content-Type: application/x-www-form-urlencoded\r\nDPoP: ${proof}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
  const ports = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? gw.port : gw2.port));
  const answers = await releaseAtOnce(ports, request(await dpopProof(key, { htu: gw.tokenUrl })));
  t.equal(answers.filter((a) => a.status === 200).length, 1, 'one of 20 copies released at once, 10 to each gateway');
  t.ok(answers.every((a) => a.status === 200 || a.body.includes('"invalid_dpop_proof"')));

  const proof = await dpopProof(key, { htu: gw.tokenUrl });
  const [first] = await releaseAtOnce([gw.port], request(proof));
  const [second] = await releaseAtOnce([gw2.port], request(proof));
  t.same([first?.status, second?.status], [200, 400], 'used at one gateway, refused at the other');
});

t.test('delegation and token exchange take a bound user token; the new token is bound to the caller’s own proof', async (t) => {
  const validatorsDir = fileURLToPath(new URL('../../validators', import.meta.url));
  const gateway = await startTestGateway(t, {
    validatorsDir,
    watchValidators: false,
    patch: (raw) => {
      addPasswordFixtures(raw, fixtures);
      const client = (clientId: string, allowedGrantTypes: string[], allowedScopes: string[], extra: Record<string, unknown> = {}) => ({
        clientId,
        clientSecrets: [{ value: sha256Secret('secret') }],
        allowedGrantTypes,
        allowedScopes,
        ...extra,
      });
      (raw.clients as unknown[]).push(
        client('frontend', ['password'], ['openid', 'api1']),
        client('api1', ['delegation', 'urn:ietf:params:oauth:grant-type:token-exchange'], ['api2'], { audiences: ['urn:api1'] }),
      );
    },
  });
  const discoverAs = (clientId: string) => discover(gateway, clientId, oidc.ClientSecretBasic('secret'));
  const [frontend, api1] = await Promise.all([discoverAs('frontend'), discoverAs('api1')]);
  const userKey = oidc.getDPoPHandle(frontend, await oidc.randomDPoPKeyPair('ES256'));
  const apiKeyPair = await oidc.randomDPoPKeyPair('ES256');
  const apiJkt = await calculateJwkThumbprint(await exportJWK(apiKeyPair.publicKey), 'sha256');
  const apiKey = oidc.getDPoPHandle(api1, apiKeyPair);
  const userToken = async () =>
    (
      await oidc.genericGrantRequest(
        frontend,
        'password',
        { username: 'alice', password: 'alice-pw', scope: 'openid api1' },
        { DPoP: userKey },
      )
    ).access_token;
  const subject = await userToken();
  const userJkt = (decodeJwt(subject).cnf as { jkt: string }).jkt;

  const delegated = await oidc.genericGrantRequest(api1, 'delegation', { token: subject, scope: 'api2' }, { DPoP: apiKey });
  const claims = decodeJwt(delegated.access_token);
  t.equal(claims.sub, 'sub-alice');
  t.same(claims.cnf, { jkt: apiJkt }, "bound to the calling API's key, not the user's");
  t.not(apiJkt, userJkt);
  const plain = await oidc.genericGrantRequest(api1, 'delegation', { token: await userToken(), scope: 'api2' });
  t.equal(plain.token_type.toLowerCase(), 'bearer', 'without a proof of its own, the API gets a bearer token');
  t.notOk('cnf' in decodeJwt(plain.access_token), 'the subject token’s cnf is not carried over');

  const exchanged = await oidc.genericGrantRequest(
    api1,
    'urn:ietf:params:oauth:grant-type:token-exchange',
    { subject_token: await userToken(), subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', scope: 'api2' },
    { DPoP: apiKey },
  );
  t.same(decodeJwt(exchanged.access_token).cnf, { jkt: apiJkt }, 'token exchange alike');
});
