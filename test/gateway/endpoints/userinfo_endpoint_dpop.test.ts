// The UserInfo endpoint with DPoP-bound tokens (RFC 9449 §7; gateway/endpoints/userinfo_endpoint.ts,
// workers/endpoints/userinfo.ts) over real HTTP: the DPoP scheme with a proof for this request,
// this token and its key; a bound token sent as a bearer token is refused; every refusal carries a
// DPoP challenge.
import t from 'tap';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { dpopKey, dpopProof } from '../../helpers/dpop_proof.js';
import { addPasswordFixtures, passwordFixtures } from '../../helpers/password_users.js';
import { rawRequest } from '../../helpers/raw_http.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

const fixtures = await passwordFixtures();
const gw = await startTestGateway(t, { patch: (raw) => addPasswordFixtures(raw, fixtures) });
const userInfoUrl = `${gw.url}/connect/userinfo`;
const key = await dpopKey();
const algs = 'DPoP algs="ES256 ES384 EdDSA RS256 PS256"';
const form = { 'content-type': 'application/x-www-form-urlencoded' };

async function passwordToken(proof: boolean): Promise<string> {
  const headers: Record<string, string> = { authorization: basicAuthorization('ro'), ...form };
  if (proof) headers.dpop = await dpopProof(key, { htu: gw.tokenUrl });
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers,
    body: new URLSearchParams({ grant_type: 'password', username: 'alice', password: 'alice-pw', scope: 'openid profile' }).toString(),
  });
  const body = (await res.json()) as { access_token?: string };
  if (body.access_token === undefined) throw new Error(`no token: ${JSON.stringify(body)}`);
  return body.access_token;
}

async function userInfo(init: RequestInit): Promise<{ status: number; challenge: string | null; body: Record<string, unknown> }> {
  const res = await fetch(userInfoUrl, init);
  return { status: res.status, challenge: res.headers.get('www-authenticate'), body: (await res.json()) as Record<string, unknown> };
}

const bound = await passwordToken(true);

t.test('the DPoP scheme with a proof for the request, the token (ath) and its key: the claims', async (t) => {
  const get = await userInfo({
    headers: { authorization: `DPoP ${bound}`, dpop: await dpopProof(key, { htm: 'GET', htu: userInfoUrl, accessToken: bound }) },
  });
  t.same([get.status, get.body], [200, { sub: 'sub-alice', name: 'Alice' }]);
  const post = await userInfo({
    method: 'POST',
    headers: { authorization: `dpop ${bound}`, dpop: await dpopProof(key, { htm: 'POST', htu: userInfoUrl, accessToken: bound }) },
  });
  t.same([post.status, post.body.sub], [200, 'sub-alice'], 'POST, and the scheme is case-insensitive');
});

t.test('a bound token sent as a bearer token is refused with a DPoP challenge (RFC 9449 §7.2)', async (t) => {
  const description = 'The access token is bound to a DPoP key: send it with the DPoP scheme and a proof.';
  const proof = await dpopProof(key, { htm: 'GET', htu: userInfoUrl, accessToken: bound });
  for (const [what, init] of [
    ['Bearer header', { headers: { authorization: `Bearer ${bound}` } }],
    ['Bearer header with a proof', { headers: { authorization: `Bearer ${bound}`, dpop: proof } }],
    ['form parameter', { method: 'POST', headers: form, body: `access_token=${bound}` }],
  ] as [string, RequestInit][]) {
    const answer = await userInfo(init);
    t.equal(answer.status, 401, what);
    t.same(answer.body, { error: 'invalid_token', error_description: description }, what);
    t.equal(answer.challenge, `${algs}, error="invalid_token", error_description="${description}"`, what);
  }
});

t.test('every rejected proof: 401 invalid_dpop_proof with a DPoP challenge', async (t) => {
  const other = await passwordToken(true);
  const otherKey = await dpopKey('EdDSA');
  const replayed = await dpopProof(key, { htm: 'GET', htu: userInfoUrl, accessToken: bound });
  const first = await userInfo({ headers: { authorization: `DPoP ${bound}`, dpop: replayed } });
  t.equal(first.status, 200);
  const cases: [string, string | undefined][] = [
    ['no proof', undefined],
    ['a replayed proof', replayed],
    ['ath of another token', await dpopProof(key, { htm: 'GET', htu: userInfoUrl, accessToken: other })],
    ['no ath', await dpopProof(key, { htm: 'GET', htu: userInfoUrl })],
    ['a proof by another key', await dpopProof(otherKey, { htm: 'GET', htu: userInfoUrl, accessToken: bound })],
    ['htm POST on a GET', await dpopProof(key, { htm: 'POST', htu: userInfoUrl, accessToken: bound })],
    ['htu of the token endpoint', await dpopProof(key, { htm: 'GET', htu: gw.tokenUrl, accessToken: bound })],
    ['iat too old', await dpopProof(key, { htm: 'GET', htu: userInfoUrl, accessToken: bound, iat: Math.floor(Date.now() / 1000) - 300 })],
  ];
  const description = 'The DPoP proof is missing or invalid.';
  for (const [what, proof] of cases) {
    const headers: Record<string, string> = { authorization: `DPoP ${bound}` };
    if (proof !== undefined) headers.dpop = proof;
    const answer = await userInfo({ headers });
    t.equal(answer.status, 401, what);
    t.same(answer.body, { error: 'invalid_dpop_proof', error_description: description }, what);
    t.equal(answer.challenge, `${algs}, error="invalid_dpop_proof", error_description="${description}"`, what);
  }
});

t.test('two DPoP headers: 401 invalid_dpop_proof', async (t) => {
  const [a, b] = [
    await dpopProof(key, { htm: 'GET', htu: userInfoUrl, accessToken: bound }),
    await dpopProof(key, { htm: 'GET', htu: userInfoUrl, accessToken: bound }),
  ];
  const answer = await rawRequest(gw.port, [
    `GET /connect/userinfo HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: DPoP ${bound}\r\nDPoP: ${a}\r\nDPoP: ${b}\r\n\r\n`,
  ]);
  t.equal(answer.status, 401);
  t.match(answer.headers['www-authenticate'], /^DPoP algs="[^"]+", error="invalid_dpop_proof"/);
});

t.test('the DPoP scheme with a bearer token, or an invalid token: invalid_token, DPoP challenge', async (t) => {
  const unbound = await passwordToken(false);
  const notBound = await userInfo({
    headers: { authorization: `DPoP ${unbound}`, dpop: await dpopProof(key, { htm: 'GET', htu: userInfoUrl, accessToken: unbound }) },
  });
  t.equal(notBound.status, 401);
  t.equal(notBound.body.error_description, 'The access token is not bound to a DPoP key.');
  t.match(notBound.challenge, /^DPoP algs="[^"]+", error="invalid_token"/);
  const garbage = await userInfo({
    headers: { authorization: 'DPoP garbage', dpop: await dpopProof(key, { htm: 'GET', htu: userInfoUrl, accessToken: 'garbage' }) },
  });
  t.equal(garbage.status, 401);
  t.equal(garbage.challenge, `${algs}, error="invalid_token", error_description="The access token is invalid, expired or revoked."`);
  const bearerStill = await userInfo({ headers: { authorization: `Bearer ${unbound}` } });
  t.equal(bearerStill.status, 200, 'bearer tokens work as before');
});
