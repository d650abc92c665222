// The UserInfo endpoint (gateway/endpoints/userinfo_endpoint.ts, workers/endpoints/userinfo.ts; OIDC Core
// §5.3, RFC 6750) over real HTTP: the claims of the token's identity scopes, the ways a token may
// be sent, and every refusal with its WWW-Authenticate challenge.
import t from 'tap';
import { SignJWT, importJWK, type JWK } from 'jose';
import { generateSigningKey } from '../../../gateway/keys/key_loader.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { addPasswordFixtures, passwordFixtures } from '../../helpers/password_users.js';
import { rawConversation, splitFirstResponse } from '../../helpers/raw_http.js';
import { startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';

const fixtures = await passwordFixtures();

const gw = await startTestGateway(t, {
  patch: (raw) => {
    addPasswordFixtures(raw, fixtures);
    (raw.identityResources as unknown[]).push({ name: 'email', claims: ['email', 'email_verified'] });
    const alice = (raw.users as { username: string; claims?: Record<string, unknown> }[]).find((u) => u.username === 'alice');
    if (alice) alice.claims = { name: 'Alice', email: 'alice@example.com', email_verified: true, role: 'admin' };
    (raw.clients as { clientId: string; allowedScopes: string[] }[]).find((c) => c.clientId === 'ro')?.allowedScopes.push('email');
  },
});
const userInfoUrl = `${gw.url}/connect/userinfo`;

async function passwordToken(gw: TestGateway, scope: string, username = 'alice', password = 'alice-pw'): Promise<string> {
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { authorization: basicAuthorization('ro'), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', username, password, scope }).toString(),
  });
  const body = (await res.json()) as { access_token?: string };
  if (body.access_token === undefined) throw new Error(`no token: ${JSON.stringify(body)}`);
  return body.access_token;
}

interface Answer {
  status: number;
  challenge: string | null;
  cacheControl: string | null;
  body: Record<string, unknown>;
}

async function userInfo(init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(userInfoUrl, init);
  const text = await res.text();
  return {
    status: res.status,
    challenge: res.headers.get('www-authenticate'),
    cacheControl: res.headers.get('cache-control'),
    body: text.length > 0 ? (JSON.parse(text) as Record<string, unknown>) : {},
  };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const form = { 'content-type': 'application/x-www-form-urlencoded' };

t.test('GET with a Bearer header: sub and the claims of the granted identity scopes, nothing else', async (t) => {
  const token = await passwordToken(gw, 'openid profile email api1');
  const answer = await userInfo({ headers: bearer(token) });
  t.equal(answer.status, 200);
  t.same(answer.body, { sub: 'sub-alice', name: 'Alice', email: 'alice@example.com', email_verified: true });
  t.equal(answer.cacheControl, 'no-store', 'personal data is not cached');

  const narrow = await userInfo({ headers: bearer(await passwordToken(gw, 'openid')) });
  t.same(narrow.body, { sub: 'sub-alice' }, 'openid alone releases only sub');
  const profile = await userInfo({ headers: { authorization: `bEaReR ${await passwordToken(gw, 'openid profile')}` } });
  t.same(profile.body, { sub: 'sub-alice', name: 'Alice' }, 'the scheme is case-insensitive; profile adds name, not email');
});

t.test('POST: the token in the form body or in the header, never both', async (t) => {
  const token = await passwordToken(gw, 'openid profile');
  const inForm = await userInfo({ method: 'POST', headers: form, body: `access_token=${token}` });
  t.same([inForm.status, inForm.body], [200, { sub: 'sub-alice', name: 'Alice' }], 'access_token form parameter (RFC 6750 §2.2)');
  const inHeader = await userInfo({ method: 'POST', headers: bearer(token) });
  t.same([inHeader.status, inHeader.body.sub], [200, 'sub-alice'], 'POST with only the header');
  const both = await userInfo({ method: 'POST', headers: { ...form, ...bearer(token) }, body: `access_token=${token}` });
  t.equal(both.status, 400);
  t.equal(both.body.error, 'invalid_request');
  t.match(both.challenge, /^Bearer error="invalid_request"/);
});

t.test('no token: 401 with a challenge that names no error (RFC 6750 §3.1)', async (t) => {
  for (const init of [
    {},
    { headers: { authorization: 'Basic cm86c2VjcmV0' } },
    { method: 'POST', headers: form, body: 'x=1' },
  ] as RequestInit[]) {
    const answer = await userInfo(init);
    t.equal(answer.status, 401);
    t.equal(answer.challenge, 'Bearer');
  }
});

t.test('refused tokens: 401 invalid_token, with the error in the challenge', async (t) => {
  const token = await passwordToken(gw, 'openid profile');
  const [header, payload] = token.split('.') as [string, string, string];
  const forged = await new SignJWT({ scope: 'openid profile', client_id: 'ro', jti: 'x' })
    .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: JSON.parse(Buffer.from(header, 'base64url').toString()).kid })
    .setIssuer(gw.config.issuer)
    .setSubject('sub-alice')
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(await importJWK((await generateSigningKey('ES256')).jwk as JWK, 'ES256'));
  const cases: [string, string][] = [
    ['garbage', 'not-a-jwt'],
    ['a signature of another key', forged],
    ['a changed payload', `${header}.${payload}x.${token.split('.')[2]}`],
  ];
  for (const [what, bad] of cases) {
    const answer = await userInfo({ headers: bearer(bad) });
    t.equal(answer.status, 401, what);
    t.equal(answer.body.error, 'invalid_token', what);
    t.equal(answer.challenge, 'Bearer error="invalid_token", error_description="The access token is invalid, expired or revoked."', what);
  }

  const revoked = await passwordToken(gw, 'openid profile');
  const revocation = await fetch(`${gw.url}/connect/revocation`, {
    method: 'POST',
    headers: { authorization: basicAuthorization('ro'), ...form },
    body: `token=${revoked}`,
  });
  t.equal(revocation.status, 200);
  t.equal((await userInfo({ headers: bearer(revoked) })).status, 401, 'a revoked token');

  const malformed = await userInfo({ headers: { authorization: 'Bearer two words' } });
  t.same([malformed.status, malformed.body.error], [400, 'invalid_request'], 'a Bearer header whose token has a space');
});

t.test('an ID token is not an access token; a token without openid is insufficient', async (t) => {
  const api = await passwordToken(gw, 'api1');
  const answer = await userInfo({ headers: bearer(api) });
  t.equal(answer.status, 403);
  t.equal(answer.body.error, 'insufficient_scope');
  t.match(answer.challenge, /^Bearer error="insufficient_scope", .*scope="openid"$/);

  const cc = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { authorization: basicAuthorization('identity-only'), ...form },
    body: 'grant_type=client_credentials&scope=openid',
  });
  const ccToken = (await cc.json()) as { access_token?: string; error?: string };
  if (ccToken.access_token !== undefined) {
    t.equal((await userInfo({ headers: bearer(ccToken.access_token) })).status, 403, 'a client-only token has no user to describe');
  } else {
    t.equal(ccToken.error, 'invalid_scope', 'client_credentials cannot be granted openid');
  }
});

t.test('other methods: 405 with Allow; raw HEAD too', async (t) => {
  const put = await fetch(userInfoUrl, { method: 'PUT' });
  t.equal(put.status, 405);
  t.equal(put.headers.get('allow'), 'GET, POST');
  const head = await rawConversation(gw.port, 'HEAD /connect/userinfo HTTP/1.1\r\nHost: x\r\n\r\n', 500);
  t.same(head.statuses, [405]);
  t.notMatch(splitFirstResponse(head.text).rest, /\S/, 'no content after a HEAD answer');
});

t.test('discovery names the endpoint', async (t) => {
  const doc = (await (await fetch(`${gw.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
  t.equal(doc.userinfo_endpoint, userInfoUrl);
});
