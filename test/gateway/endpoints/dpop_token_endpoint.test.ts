// DPoP at the token endpoint (RFC 9449 §4.3, §5, §8; gateway/endpoints/token_endpoint.ts,
// workers/dpop/dpop_proof.ts) over real HTTP: a bound token, every rejection with its exact body,
// server nonces, refresh tokens of public clients bound to the key, introspection and discovery.
// openid-client end to end and two gateways on one Redis: test/e2e/dpop.test.ts.
import { generateKeyPairSync, sign } from 'node:crypto';
import { laneOf } from '../../../gateway/dispatch/worker_dispatcher.js';
import { mayRunAgainAfterStart } from '../../../wire/rerun.js';
import t from 'tap';
import { decodeJwt, SignJWT } from 'jose';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { dpopKey, dpopProof, unsignedProof, type DPoPKey } from '../../helpers/dpop_proof.js';
import { addPasswordFixtures, offlineUserClient, passwordFixtures } from '../../helpers/password_users.js';
import { rawRequest } from '../../helpers/raw_http.js';
import { sha256Secret, startTestGateway } from '../../helpers/test_gateway.js';

const fixtures = await passwordFixtures();
const gw = await startTestGateway(t, {
  patch: (raw) => {
    addPasswordFixtures(raw, fixtures);
    (raw.clients as unknown[]).push(
      {
        clientId: 'dpop-only',
        clientSecrets: [{ value: sha256Secret('secret') }],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
        requireDPoP: true,
      },
      {
        clientId: 'nonce-cc',
        clientSecrets: [{ value: sha256Secret('secret') }],
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
        requireDPoPNonce: true,
      },
      offlineUserClient('public-app', { requireClientSecret: false, clientSecrets: [] }),
      offlineUserClient('public-nonce-app', { requireClientSecret: false, clientSecrets: [], requireDPoPNonce: true }),
      offlineUserClient('confidential-app'),
    );
  },
});
const htu = gw.tokenUrl;
const invalidProof = '{"error":"invalid_dpop_proof","error_description":"The DPoP proof is invalid."}';

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
  text: string;
}

async function token(params: Record<string, string>, options: { client?: string; proof?: string; secret?: boolean } = {}): Promise<Answer> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  const body = new URLSearchParams(params);
  const client = options.client ?? 'm2m';
  if (options.secret === false) body.set('client_id', client);
  else headers.authorization = basicAuthorization(client, 'secret');
  if (options.proof !== undefined) headers.dpop = options.proof;
  const res = await fetch(gw.tokenUrl, { method: 'POST', headers, body: body.toString() });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: JSON.parse(text) as Record<string, unknown> };
}

const cc = { grant_type: 'client_credentials', scope: 'api1' };
const key = await dpopKey();

t.test('a valid proof binds the access token: cnf.jkt is the key thumbprint, token_type DPoP', async (t) => {
  const answer = await token(cc, { proof: await dpopProof(key, { htu }) });
  t.equal(answer.status, 200, answer.text);
  t.equal(answer.body.token_type, 'DPoP');
  const claims = decodeJwt(answer.body.access_token as string);
  t.same(claims.cnf, { jkt: key.jkt });
  const bearer = await token(cc);
  t.equal(bearer.body.token_type, 'Bearer', 'a request without a proof still gets a bearer token');
  t.notOk('cnf' in decodeJwt(bearer.body.access_token as string));
  t.equal(answer.headers.get('dpop-nonce'), null, 'no nonce for a client that needs none');
});

t.test('every allowed algorithm binds the token to its key', async (t) => {
  for (const alg of ['ES256', 'ES384', 'EdDSA', 'RS256', 'PS256']) {
    const algKey = await dpopKey(alg);
    const answer = await token(cc, { proof: await dpopProof(algKey, { htu }) });
    t.equal(answer.status, 200, `${alg}: ${answer.text}`);
    t.same(decodeJwt(answer.body.access_token as string).cnf, { jkt: algKey.jkt }, alg);
  }
});

t.test('htu is compared without query and fragment, after normalization (RFC 9449 §4.3)', async (t) => {
  const url = new URL(htu);
  for (const variant of [`${htu}?x=1`, `${htu}#f`, `HTTP://${url.host}${url.pathname}`]) {
    const answer = await token(cc, { proof: await dpopProof(key, { htu: variant }) });
    t.equal(answer.status, 200, variant);
  }
});

t.test('every rejected proof: 400 invalid_dpop_proof, and no token', async (t) => {
  const now = Math.floor(Date.now() / 1000);
  const privateHeader = { jwk: key.privateJwk };
  const edKey = await dpopKey('EdDSA');
  // jose will not sign with a short key: this proof is signed with node:crypto.
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 });
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const shortInput = `${part({ alg: 'RS256', typ: 'dpop+jwt', jwk: rsa.publicKey.export({ format: 'jwk' }) })}.${part({ htm: 'POST', htu, iat: now, jti: crypto.randomUUID() })}`;
  const shortRsaProof = `${shortInput}.${sign('sha256', Buffer.from(shortInput), rsa.privateKey).toString('base64url')}`;
  const hmac = await new SignJWT({ htm: 'POST', htu, iat: now, jti: crypto.randomUUID() })
    .setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk: key.publicJwk } as never)
    .sign(new TextEncoder().encode('a shared secret of 32 bytes......'));
  const cases: [string, string][] = [
    ['iat too old (beyond the 60 s window)', await dpopProof(key, { htu, iat: now - 120 })],
    ['iat in the future', await dpopProof(key, { htu, iat: now + 120 })],
    ['another htu', await dpopProof(key, { htu: 'http://127.0.0.1:1/connect/token' })],
    ['another path', await dpopProof(key, { htu: `${new URL(htu).origin}/connect/userinfo` })],
    ['htm GET', await dpopProof(key, { htu, htm: 'GET' })],
    ['htm post (case matters)', await dpopProof(key, { htu, htm: 'post' })],
    ['alg none', unsignedProof(key, htu)],
    ['HS256 with the public key', hmac],
    ['a private key in the header', await dpopProof(key, { htu, header: privateHeader })],
    ['typ JWT', await dpopProof(key, { htu, header: { typ: 'JWT' } })],
    ['no jwk', await dpopProof(key, { htu, header: { jwk: undefined } })],
    ['ES256 named for an Ed25519 key', await dpopProof({ ...edKey, alg: 'ES256' }, { htu, header: { alg: 'EdDSA', jwk: key.publicJwk } })],
    ['a crit extension', await dpopProof(key, { htu, header: { crit: ['b64'], b64: true } })],
    ['an RSA key under 2048 bits', shortRsaProof],
    ['iat as a string', await dpopProof(key, { htu, iat: String(now) as unknown as number })],
    ['not a JWT', 'not-a-jwt'],
    ['a signature of another key', await dpopProof({ ...key, privateKey: (await dpopKey()).privateKey }, { htu })],
  ];
  for (const [what, proof] of cases) {
    const answer = await token(cc, { proof });
    t.equal(answer.status, 400, what);
    t.equal(answer.text, invalidProof, what);
    t.equal(answer.headers.get('cache-control'), 'no-store', what);
  }
});

t.test('a replayed proof is refused: its jti is single use, even with a burst of copies', async (t) => {
  const proof = await dpopProof(key, { htu });
  const answers = await Promise.all(Array.from({ length: 10 }, () => token(cc, { proof })));
  t.same(answers.map((a) => a.status).sort(), [200, 400, 400, 400, 400, 400, 400, 400, 400, 400]);
  t.ok(answers.filter((a) => a.status === 400).every((a) => a.text === invalidProof));
});

t.test('two DPoP headers: 400 invalid_dpop_proof (RFC 9449 §4.3 check 1)', async (t) => {
  const [a, b] = [await dpopProof(key, { htu }), await dpopProof(key, { htu })];
  const body = 'grant_type=client_credentials&scope=api1';
  const answer = await rawRequest(gw.port, [
    `POST /connect/token HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basicAuthorization('m2m', 'secret')}\r\n` +
      `Content-Type: application/x-www-form-urlencoded\r\nDPoP: ${a}\r\nDPoP: ${b}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  ]);
  t.equal(answer.status, 400);
  t.equal(answer.body, '{"error":"invalid_dpop_proof","error_description":"The request carries more than one DPoP header."}');
});

t.test('requireDPoP: a request without a proof is refused, one with a proof gets a bound token', async (t) => {
  const without = await token(cc, { client: 'dpop-only' });
  t.equal(without.status, 400);
  t.equal(without.text, '{"error":"invalid_dpop_proof","error_description":"A DPoP proof is required for this client."}');
  const withProof = await token(cc, { client: 'dpop-only', proof: await dpopProof(key, { htu }) });
  t.equal(withProof.status, 200);
  t.equal(withProof.body.token_type, 'DPoP');
});

t.test('server nonces: use_dpop_nonce with a DPoP-Nonce header, then the nonce is accepted', async (t) => {
  const first = await token(cc, { client: 'nonce-cc', proof: await dpopProof(key, { htu }) });
  t.equal(first.status, 400);
  t.equal(first.text, '{"error":"use_dpop_nonce","error_description":"Authorization server requires nonce in DPoP proof."}');
  const nonce = first.headers.get('dpop-nonce');
  t.match(nonce, /^[0-9a-z]+\.[A-Za-z0-9_-]{22}$/);

  const forged = await token(cc, { client: 'nonce-cc', proof: await dpopProof(key, { htu, nonce: `${nonce}x` }) });
  t.equal(forged.body.error, 'use_dpop_nonce', 'a nonce the server did not make');
  const second = await token(cc, { client: 'nonce-cc', proof: await dpopProof(key, { htu, nonce: nonce as string }) });
  t.equal(second.status, 200, second.text);
  t.equal(second.body.token_type, 'DPoP');
  t.equal(second.headers.get('dpop-nonce'), nonce, 'every answer to the client carries the current nonce');
  const other = await token(cc, { proof: await dpopProof(key, { htu }) });
  t.equal(other.status, 200, 'a client without requireDPoPNonce needs none');
});

async function passwordLogin(client: string, proofKey: DPoPKey | undefined, secret: boolean): Promise<Answer> {
  const params = { grant_type: 'password', username: 'alice', password: 'alice-pw', scope: 'api1 offline_access' };
  return token(params, { client, secret, ...(proofKey ? { proof: await dpopProof(proofKey, { htu }) } : {}) });
}

t.test("a public client's refresh token is bound to its key: refreshes need a proof by that key", async (t) => {
  const login = await passwordLogin('public-app', key, false);
  t.equal(login.status, 200, login.text);
  const refreshToken = login.body.refresh_token as string;
  const refresh = (proof?: string) =>
    token(
      { grant_type: 'refresh_token', refresh_token: refreshToken },
      { client: 'public-app', secret: false, ...(proof ? { proof } : {}) },
    );
  const mismatch = '{"error":"invalid_grant","error_description":"The refresh token is bound to another DPoP key."}';

  const otherKey = await dpopKey('EdDSA');
  const wrongKey = await refresh(await dpopProof(otherKey, { htu }));
  t.equal(wrongKey.status, 400);
  t.equal(wrongKey.text, mismatch, 'a proof by another key');
  const noProof = await refresh();
  t.equal(noProof.text, mismatch, 'no proof at all');

  const right = await refresh(await dpopProof(key, { htu }));
  t.equal(right.status, 200, 'the refused attempts left the token usable');
  t.equal(right.body.token_type, 'DPoP');
  t.same(decodeJwt(right.body.access_token as string).cnf, { jkt: key.jkt });

  const successor = right.body.refresh_token as string;
  const successorWrongKey = await token(
    { grant_type: 'refresh_token', refresh_token: successor },
    { client: 'public-app', secret: false, proof: await dpopProof(otherKey, { htu }) },
  );
  t.equal(successorWrongKey.text, mismatch, 'the rotated successor keeps the binding');
});

t.test("a confidential client's refresh token is not bound (RFC 9449 §5); each access token is", async (t) => {
  const login = await passwordLogin('confidential-app', key, true);
  t.equal(login.body.token_type, 'DPoP');
  const otherKey = await dpopKey('PS256');
  const refreshed = await token(
    { grant_type: 'refresh_token', refresh_token: login.body.refresh_token as string },
    { client: 'confidential-app', proof: await dpopProof(otherKey, { htu }) },
  );
  t.equal(refreshed.status, 200, refreshed.text);
  t.same(decodeJwt(refreshed.body.access_token as string).cnf, { jkt: otherKey.jkt }, 'bound to the key of this proof');
  const bearer = await token(
    { grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token as string },
    { client: 'confidential-app' },
  );
  t.equal(bearer.body.token_type, 'Bearer', 'and a refresh without a proof gets a bearer token');
});

t.test("revoking a public client's bound refresh token takes a proof by its key; without one the family lives", async (t) => {
  const revocationHtu = `${gw.url}/connect/revocation`;
  const login = await passwordLogin('public-app', key, false);
  t.equal(login.status, 200, login.text);
  const refreshToken = login.body.refresh_token as string;
  const revoke = async (proof?: string, client = 'public-app', token = refreshToken) => {
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (proof !== undefined) headers.dpop = proof;
    const res = await fetch(revocationHtu, { method: 'POST', headers, body: new URLSearchParams({ token, client_id: client }).toString() });
    return { status: res.status, headers: res.headers, text: await res.text() };
  };
  const required = `{"error":"invalid_dpop_proof","error_description":"Revoking this refresh token requires a DPoP proof by its key."}`;

  // A thief holds the token and the public client's id, not the key (RFC 9449 §5).
  const noProof = await revoke();
  t.same([noProof.status, noProof.text], [400, required], 'no proof: refused, not a silent 200');
  const otherKey = await dpopKey('ES384');
  const wrongKey = await revoke(await dpopProof(otherKey, { htu: revocationHtu }));
  t.same([wrongKey.status, wrongKey.text], [400, required], 'a proof by another key');
  const forTokenEndpoint = await revoke(await dpopProof(key, { htu }));
  t.same([forTokenEndpoint.status, forTokenEndpoint.text], [400, invalidProof], "a proof made for the token endpoint's URL");
  const alive = await token(
    { grant_type: 'refresh_token', refresh_token: refreshToken },
    { client: 'public-app', secret: false, proof: await dpopProof(key, { htu }) },
  );
  t.equal(alive.status, 200, 'the refused revocations left the family alone');

  // The owner revokes the family with a proof by its key: RFC 7009's empty 200.
  const successor = alive.body.refresh_token as string;
  const revoked = await revoke(await dpopProof(key, { htu: revocationHtu }), 'public-app', successor);
  t.same([revoked.status, revoked.text], [200, ''], 'a proof by the key revokes');
  const gone = await token(
    { grant_type: 'refresh_token', refresh_token: successor },
    { client: 'public-app', secret: false, proof: await dpopProof(key, { htu }) },
  );
  t.equal(gone.body.error, 'invalid_grant', 'the family is revoked');

  // RFC 9449 §8: a client that must use nonces gets one, as at the token endpoint.
  const nonceLogin = (proof: string) =>
    token(
      { grant_type: 'password', username: 'alice', password: 'alice-pw', scope: 'api1 offline_access' },
      { client: 'public-nonce-app', secret: false, proof },
    );
  const firstNonce = (await nonceLogin(await dpopProof(key, { htu }))).headers.get('dpop-nonce') ?? '';
  const bound = await nonceLogin(await dpopProof(key, { htu, nonce: firstNonce }));
  t.equal(bound.status, 200, bound.text);
  const boundToken = bound.body.refresh_token as string;
  const withoutNonce = await revoke(await dpopProof(key, { htu: revocationHtu }), 'public-nonce-app', boundToken);
  t.equal(withoutNonce.status, 400);
  t.match(withoutNonce.text, /"use_dpop_nonce"/);
  const nonce = withoutNonce.headers.get('dpop-nonce');
  t.ok(nonce, 'the answer carries DPoP-Nonce');
  const withNonce = await revoke(await dpopProof(key, { htu: revocationHtu, nonce: nonce ?? '' }), 'public-nonce-app', boundToken);
  t.same([withNonce.status, withNonce.text], [200, ''], 'revoked with the nonce');
});

t.test('introspection reports the binding: token_type DPoP and cnf (RFC 9449 §6.2)', async (t) => {
  const issued = await token(cc, { proof: await dpopProof(key, { htu }) });
  const res = await fetch(`${gw.url}/connect/introspect`, {
    method: 'POST',
    headers: { authorization: basicAuthorization('m2m', 'secret'), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: issued.body.access_token as string }).toString(),
  });
  const body = (await res.json()) as Record<string, unknown>;
  t.equal(body.active, true);
  t.equal(body.token_type, 'DPoP');
  t.same(body.cnf, { jkt: key.jkt });
});

t.test('discovery lists the proof algorithms (RFC 9449 §5.1)', async (t) => {
  const doc = (await (await fetch(`${gw.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
  t.same(doc.dpop_signing_alg_values_supported, ['ES256', 'ES384', 'EdDSA', 'RS256', 'PS256']);
});

t.test('a client_credentials request with a DPoP proof leaves the fast lane and is not run twice', async (t) => {
  const plain = { kind: 'token', grantType: 'client_credentials', clientId: 'm2m', params: {} } as const;
  t.equal(laneOf(plain), 'fast', 'without a proof: unchanged');
  t.equal(
    laneOf({ ...plain, dpop: 'a.b.c' }),
    'store',
    'its jti is spent in the store: it waits for Redis like a refresh, not in front of client_credentials',
  );
  t.equal(mayRunAgainAfterStart({ ...plain, dpop: 'a.b.c' }), false, 'a second run after a thread fault would find its jti spent');
});
