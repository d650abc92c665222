import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHmac, randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { freePort } from '../../helpers/free_port.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { formPost, releaseAtOnce } from '../../helpers/release_at_once.js';
import { startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';
import { laneOf } from '../../../gateway/dispatch/worker_dispatcher.js';
import { mayRunAgainAfterStart } from '../../../wire/rerun.js';
import type { ClientAssertionCheck } from '../../../core/client_assertion.js';

// RFC 7523 §2.2 / OpenID Connect Core §9 private_key_jwt, over real HTTP against real gateways:
// every refusal is 401 invalid_client with the fixed body, never a hint of which check failed.
const assertionType = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const invalidClient = { error: 'invalid_client', error_description: 'Client authentication failed.' };
// A replay of a good assertion: invalid_client still, with its own description (not a guess).
const replayed = { error: 'invalid_client', error_description: 'The client assertion was already used.' };

interface Pair {
  privateKey: CryptoKey;
  jwk: JWK;
}

async function keyPair(alg: string, kid: string): Promise<Pair> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid } };
}

interface AssertionOptions {
  key: Pair;
  clientId: string;
  aud: string | string[];
  alg?: string;
  kid?: string | null;
  claims?: Record<string, unknown>;
  lifetime?: number;
}

function sign(o: AssertionOptions): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const kid = o.kid === undefined ? o.key.jwk.kid : o.kid;
  const claims = { iss: o.clientId, sub: o.clientId, aud: o.aud, iat: now, exp: now + (o.lifetime ?? 60), jti: randomUUID(), ...o.claims };
  return new SignJWT(claims).setProtectedHeader({ alg: o.alg ?? 'ES256', ...(kid === null ? {} : { kid }) }).sign(o.key.privateKey);
}

/** A compact JWT from raw header and claims, signed by `signature` (alg none, HMAC). */
function forge(header: Record<string, unknown>, claims: Record<string, unknown>, signature: (input: string) => string): string {
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return `${input}.${signature(input)}`;
}

/** A jwksUri server whose keys the test changes, counting the fetches. */
async function jwksServer(t: Test, keys: () => JWK[]): Promise<{ url: string; fetches: () => number }> {
  let fetches = 0;
  const server: Server = createServer((_req, res) => {
    fetches++;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: keys() }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`, fetches: () => fetches };
}

/** A jwksUri that accepts the connection and never answers. */
async function silentServer(t: Test): Promise<string> {
  const server = createServer(() => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
}

function keyClient(clientId: string, keys: { jwks?: { keys: JWK[] }; jwksUri?: string }, grants: string[] = ['client_credentials']) {
  return { clientId, ...keys, allowedGrantTypes: grants, allowedScopes: ['api1'] };
}

async function post(gw: TestGateway, path: string, params: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(params).toString(),
  });
  const text = await res.text();
  return { status: res.status, body: text.length > 0 ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const deviceGrant = 'urn:ietf:params:oauth:grant-type:device_code';

t.test('private_key_jwt on one gateway (memory store)', async (t) => {
  const inline = await keyPair('ES256', 'a');
  const other = await keyPair('ES256', 'a');
  const rsa = await keyPair('PS256', 'r');
  const first = await keyPair('ES256', 'r1');
  const rotated = await keyPair('ES256', 'r2');
  let remoteKeys = [first.jwk];
  const remote = await jwksServer(t, () => remoteKeys);
  const silent = await silentServer(t);
  const closedPort = await freePort();
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      (raw.clients as unknown[]).push(
        keyClient('pk', { jwks: { keys: [inline.jwk, rsa.jwk] } }, ['client_credentials', deviceGrant]),
        keyClient('pk-remote', { jwksUri: remote.url }),
        keyClient('pk-silent', { jwksUri: silent }),
        keyClient('pk-refused', { jwksUri: `http://127.0.0.1:${closedPort}/jwks` }),
        { ...keyClient('pk-legacy', { jwks: { keys: [inline.jwk] } }), allowTokenEndpointAudience: true },
      );
      raw.clientAssertions = { jwksRefreshCooldownSeconds: 0, jwksTimeoutMs: 300 };
      // Many refusals of one client from one address below: keep the throttle out of their way.
      raw.throttling = { clientAuthentication: { maxFailures: 1000, windowSeconds: 60 } };
    },
  });
  const issuer = gw.config.issuer;
  const token = (assertion: string, extra: Record<string, string> = {}) =>
    post(gw, '/connect/token', {
      grant_type: 'client_credentials',
      client_assertion_type: assertionType,
      client_assertion: assertion,
      ...extra,
    });

  t.test('a valid assertion gets a token for the client', async (t) => {
    const r = await token(await sign({ key: inline, clientId: 'pk', aud: issuer }), { client_id: 'pk', scope: 'api1' });
    t.equal(r.status, 200);
    const payload = JSON.parse(Buffer.from((r.body.access_token as string).split('.')[1] as string, 'base64url').toString()) as Record<
      string,
      unknown
    >;
    t.equal(payload.client_id, 'pk');
    t.equal(payload.scope, 'api1');
  });

  t.test('aud is the issuer alone: a string, or an array of exactly it (draft-ietf-oauth-rfc7523bis)', async (t) => {
    t.equal((await token(await sign({ key: inline, clientId: 'pk', aud: [issuer] }))).status, 200);
    for (const aud of [
      `${issuer}/connect/token`,
      [`${issuer}/connect/token`],
      ['https://elsewhere.example', issuer],
      [issuer, `${issuer}/connect/token`],
      [issuer, issuer],
      `${issuer}/`,
    ]) {
      t.same(await token(await sign({ key: inline, clientId: 'pk', aud })), { status: 401, body: invalidClient }, JSON.stringify(aud));
    }
  });

  t.test('a client with allowTokenEndpointAudience may use the token endpoint URL, and nothing more', async (t) => {
    t.equal((await token(await sign({ key: inline, clientId: 'pk-legacy', aud: `${issuer}/connect/token` }))).status, 200);
    t.equal((await token(await sign({ key: inline, clientId: 'pk-legacy', aud: [`${issuer}/connect/token`] }))).status, 200);
    t.equal((await token(await sign({ key: inline, clientId: 'pk-legacy', aud: issuer }))).status, 200, 'the issuer still');
    for (const aud of [`${issuer}/connect/introspect`, [`${issuer}/connect/token`, 'https://elsewhere.example']]) {
      const r = await token(await sign({ key: inline, clientId: 'pk-legacy', aud }));
      t.same(r, { status: 401, body: invalidClient }, JSON.stringify(aud));
    }
  });

  t.test('an RSA-PSS key of the same client works too, picked by kid', async (t) => {
    t.equal((await token(await sign({ key: rsa, clientId: 'pk', aud: issuer, alg: 'PS256' }))).status, 200);
  });

  t.test('a replayed assertion is refused, also when the replays race', async (t) => {
    const assertion = await sign({ key: inline, clientId: 'pk', aud: issuer });
    const answers = await Promise.all(Array.from({ length: 8 }, () => token(assertion)));
    t.equal(answers.filter((a) => a.status === 200).length, 1, 'exactly one of eight at once');
    for (const a of answers.filter((a) => a.status !== 200)) t.same(a, { status: 401, body: replayed });
    t.same(await token(assertion), { status: 401, body: replayed }, 'and later');
  });

  const refusals: [string, () => Promise<string>][] = [
    ['an expired assertion', () => sign({ key: inline, clientId: 'pk', aud: issuer, lifetime: -30 })],
    ['an exp more than five minutes ahead', () => sign({ key: inline, clientId: 'pk', aud: issuer, lifetime: 3600 })],
    [
      'an iat in the future',
      () => sign({ key: inline, clientId: 'pk', aud: issuer, claims: { iat: Math.floor(Date.now() / 1000) + 120 } }),
    ],
    ['a wrong audience', () => sign({ key: inline, clientId: 'pk', aud: 'https://other-as.example' })],
    ['an audience of another endpoint path', () => sign({ key: inline, clientId: 'pk', aud: `${issuer}/connect/userinfo` })],
    ['sub differing from iss', () => sign({ key: inline, clientId: 'pk', aud: issuer, claims: { sub: 'm2m' } })],
    ['iss naming another client with keys', () => sign({ key: inline, clientId: 'pk-remote', aud: issuer, kid: 'r1' })],
    ['iss naming a client with a secret', () => sign({ key: inline, clientId: 'm2m', aud: issuer })],
    ['a key the client does not have, under its kid', () => sign({ key: other, clientId: 'pk', aud: issuer })],
    ['no jti', () => sign({ key: inline, clientId: 'pk', aud: issuer, claims: { jti: undefined } })],
    ['an alg that does not fit the key named by kid', () => sign({ key: inline, clientId: 'pk', aud: issuer, kid: 'r' })],
    [
      'alg none',
      async () =>
        forge(
          { alg: 'none', kid: 'a' },
          { iss: 'pk', sub: 'pk', aud: issuer, jti: randomUUID(), exp: Math.floor(Date.now() / 1000) + 60 },
          () => '',
        ),
    ],
    [
      'HS256 signed with the client public key as the secret',
      async () =>
        forge(
          { alg: 'HS256', kid: 'a' },
          { iss: 'pk', sub: 'pk', aud: issuer, jti: randomUUID(), exp: Math.floor(Date.now() / 1000) + 60 },
          (input) => createHmac('sha256', JSON.stringify(inline.jwk)).update(input).digest('base64url'),
        ),
    ],
    [
      'a payload changed after signing',
      async () => {
        const [h, , s] = (await sign({ key: inline, clientId: 'pk', aud: issuer })).split('.');
        const claims = { iss: 'pk', sub: 'pk', aud: issuer, jti: randomUUID(), exp: Math.floor(Date.now() / 1000) + 60 };
        return `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`;
      },
    ],
    ['not a JWT', async () => 'not-a-jwt'],
  ];
  for (const [what, make] of refusals) {
    t.test(`${what} is 401 invalid_client`, async (t) => {
      t.same(await token(await make()), { status: 401, body: invalidClient });
    });
  }

  t.test('a client_id that differs from iss is 401', async (t) => {
    t.same(await token(await sign({ key: inline, clientId: 'pk', aud: issuer }), { client_id: 'm2m' }), {
      status: 401,
      body: invalidClient,
    });
  });

  t.test('another client_assertion_type is 401', async (t) => {
    const r = await post(gw, '/connect/token', {
      grant_type: 'client_credentials',
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:saml2-bearer',
      client_assertion: await sign({ key: inline, clientId: 'pk', aud: issuer }),
    });
    t.same(r, { status: 401, body: invalidClient });
  });

  t.test('an assertion with a secret, or with Basic, is more than one method: 400', async (t) => {
    const assertion = await sign({ key: inline, clientId: 'pk', aud: issuer });
    const both = {
      status: 400,
      body: { error: 'invalid_request', error_description: 'The request uses more than one client authentication method.' },
    };
    t.same(await token(assertion, { client_id: 'pk', client_secret: 'secret' }), both);
    const r = await post(
      gw,
      '/connect/token',
      { grant_type: 'client_credentials', client_assertion_type: assertionType, client_assertion: assertion },
      { authorization: basicAuthorization('m2m', 'secret') },
    );
    t.same(r, both);
  });

  t.test('a client with keys cannot authenticate with client_id alone', async (t) => {
    t.same(await post(gw, '/connect/token', { grant_type: 'client_credentials', client_id: 'pk' }), { status: 401, body: invalidClient });
  });

  t.test('a client with a secret keeps its path: Basic still works beside private_key_jwt clients', async (t) => {
    const r = await post(
      gw,
      '/connect/token',
      { grant_type: 'client_credentials' },
      { authorization: basicAuthorization('m2m', 'secret') },
    );
    t.equal(r.status, 200);
  });

  t.test('introspection, revocation and device authorization take private_key_jwt too', async (t) => {
    const issued = await token(await sign({ key: inline, clientId: 'pk', aud: issuer }));
    const accessToken = issued.body.access_token as string;
    const auth = async (aud: string) => ({
      client_assertion_type: assertionType,
      client_assertion: await sign({ key: inline, clientId: 'pk', aud }),
    });
    const introspection = await post(gw, '/connect/introspect', { token: accessToken, ...(await auth(issuer)) });
    t.equal(introspection.status, 200);
    t.equal(introspection.body.active, true);
    const device = await post(gw, '/connect/deviceauthorization', { scope: 'api1', ...(await auth(issuer)) });
    t.equal(device.status, 200);
    t.type(device.body.device_code, 'string');
    const revocation = await post(gw, '/connect/revocation', { token: accessToken, ...(await auth(issuer)) });
    t.equal(revocation.status, 200);
    const again = await post(gw, '/connect/introspect', { token: accessToken, ...(await auth(issuer)) });
    t.equal(again.body.active, false, 'the revocation took effect');

    const forged = { client_assertion_type: assertionType, client_assertion: await sign({ key: other, clientId: 'pk', aud: issuer }) };
    t.same(await post(gw, '/connect/introspect', { token: accessToken, ...forged }), { status: 401, body: invalidClient });
    t.same(await post(gw, '/connect/revocation', { token: accessToken, ...forged }), { status: 401, body: invalidClient });
    t.same(await post(gw, '/connect/deviceauthorization', { scope: 'api1', ...forged }), { status: 401, body: invalidClient });
  });

  t.test('a jwksUri is fetched, and fetched again when the client rotates to a kid not cached', async (t) => {
    t.equal((await token(await sign({ key: first, clientId: 'pk-remote', aud: issuer }))).status, 200);
    const before = remote.fetches();
    t.ok(before >= 1);
    t.equal((await token(await sign({ key: first, clientId: 'pk-remote', aud: issuer }))).status, 200);
    t.equal(remote.fetches(), before, 'a known kid is served from the cache');
    remoteKeys = [rotated.jwk];
    t.equal((await token(await sign({ key: rotated, clientId: 'pk-remote', aud: issuer }))).status, 200, 'the new key works at once');
    t.equal(remote.fetches(), before + 1, 'one fetch for the unknown kid');
    t.same(await token(await sign({ key: inline, clientId: 'pk-remote', aud: issuer, kid: 'nope' })), { status: 401, body: invalidClient });
  });

  t.test('a jwksUri that does not answer, or refuses the connection, is 401 invalid_client, fast', async (t) => {
    for (const clientId of ['pk-silent', 'pk-refused']) {
      const started = performance.now();
      const r = await token(await sign({ key: inline, clientId, aud: issuer }));
      t.same(r, { status: 401, body: invalidClient }, clientId);
      t.ok(performance.now() - started < 2000, `${clientId} answered within the fetch time limit`);
    }
  });
});

t.test('an unknown kid fetches a jwksUri again at most once per cooldown', async (t) => {
  const key = await keyPair('ES256', 'k1');
  const remote = await jwksServer(t, () => [key.jwk]);
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      (raw.clients as unknown[]).push(keyClient('pk-remote', { jwksUri: remote.url }));
      raw.clientAssertions = { jwksRefreshCooldownSeconds: 30 };
      raw.throttling = { clientAuthentication: { maxFailures: 3, windowSeconds: 60 } };
    },
  });
  const issuer = gw.config.issuer;
  const token = async (kid: string) =>
    post(gw, '/connect/token', {
      grant_type: 'client_credentials',
      client_assertion_type: assertionType,
      client_assertion: await sign({ key, clientId: 'pk-remote', aud: issuer, kid }),
    });
  t.equal((await token('k1')).status, 200);
  t.equal(remote.fetches(), 1);
  t.equal((await token('made-up-1')).status, 401);
  t.equal((await token('made-up-2')).status, 401);
  t.equal(remote.fetches(), 1, 'made-up kids cause no fetch within the cooldown');

  t.test('failed assertions count toward the client authentication throttle', async (t) => {
    t.equal((await token('made-up-3')).status, 401, 'the third failure (maxFailures 3) is answered, then blocks');
    t.equal((await token('k1')).status, 429, 'a good assertion from this address, while blocked');
  });
});

t.test('a jti is single use across two gateways sharing Redis', async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  if (redis.warning) t.comment(redis.warning);
  const key = await keyPair('ES256', 'a');
  const prefix = `pkjwt-${randomUUID()}:`;
  const shared = (raw: Record<string, unknown>) => {
    // One service behind two gateways: one issuer, the only aud an assertion may carry.
    raw.issuer = 'https://tessera.test';
    raw.store = { type: 'redis', url: redis.url, keyPrefix: prefix };
    (raw.clients as unknown[]).push(keyClient('pk', { jwks: { keys: [key.jwk] } }));
  };
  const [one, two] = await Promise.all([startTestGateway(t, { patch: shared }), startTestGateway(t, { patch: shared })]);
  const assertion = await sign({ key, clientId: 'pk', aud: 'https://tessera.test' });
  const request = formPost('/connect/token', {
    grant_type: 'client_credentials',
    client_assertion_type: assertionType,
    client_assertion: assertion,
  });
  const answers = await releaseAtOnce([one.port, two.port, one.port, two.port, one.port, two.port], request);
  t.equal(answers.filter((a) => a.status === 200).length, 1, 'exactly one of six, over two gateways');
  for (const a of answers.filter((a) => a.status !== 200)) {
    t.equal(a.status, 401);
    t.same(JSON.parse(a.body), replayed);
  }
});

t.test('a client_credentials request with an assertion leaves the fast lane and is not run twice', async (t) => {
  const clientAssertion: ClientAssertionCheck = { jwt: 'a.b.c', alg: 'ES256', keys: [], jti: 'j', exp: 0 };
  const plain = { kind: 'token', grantType: 'client_credentials', clientId: 'm2m', params: {} } as const;
  t.equal(laneOf(plain), 'fast', 'a secret client: unchanged');
  t.equal(mayRunAgainAfterStart(plain), true);
  t.equal(laneOf({ ...plain, clientAssertion }), 'store', 'its jti is spent in the store');
  t.equal(mayRunAgainAfterStart({ ...plain, clientAssertion }), false, 'a second run would find its jti spent');
  t.equal(laneOf({ kind: 'client_assertion', clientId: 'pk', params: {}, clientAssertion }), 'store');
});
