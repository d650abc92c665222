// CORS for browser clients (gateway/http/cors.ts, docs/endpoints.md "CORS") over real HTTP: an
// origin a client lists in allowedCorsOrigins gets Access-Control-Allow-Origin on the token,
// revocation and UserInfo endpoints, discovery and JWKS, and its preflights are answered; any
// other origin gets no CORS header. Without any listed origin nothing changes.
import t from 'tap';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { rawConversation, splitFirstResponse } from '../../helpers/raw_http.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

const appOrigin = 'https://app.example';
const otherOrigin = 'https://evil.example';

const gw = await startTestGateway(t, {
  patch: (raw) => {
    (raw.clients as unknown[]).push({
      clientId: 'spa',
      requireClientSecret: false,
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1'],
      allowedCorsOrigins: [appOrigin, 'http://localhost:3000'],
    });
  },
});

const form = { 'content-type': 'application/x-www-form-urlencoded' };

async function preflight(path: string, origin: string, method: string) {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type' },
  });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

t.test('preflights from an allowed origin: 204 with the methods and headers each endpoint takes', async (t) => {
  for (const [path, methods] of [
    ['/connect/token', 'POST'],
    ['/connect/revocation', 'POST'],
    ['/connect/userinfo', 'GET, POST'],
    ['/.well-known/openid-configuration', 'GET'],
    ['/.well-known/openid-configuration/jwks', 'GET'],
    ['/.well-known/oauth-authorization-server', 'GET'],
  ] as const) {
    const answer = await preflight(path, appOrigin, 'POST');
    t.equal(answer.status, 204, path);
    t.equal(answer.headers.get('access-control-allow-origin'), appOrigin, `${path}: the origin itself, never *`);
    t.equal(answer.headers.get('access-control-allow-methods'), methods, path);
    t.match(answer.headers.get('access-control-allow-headers'), /Authorization/, path);
    t.match(answer.headers.get('access-control-allow-headers'), /DPoP/, path);
    t.equal(answer.headers.get('access-control-max-age'), '600', path);
    t.equal(answer.headers.get('vary'), 'Origin', path);
    t.equal(answer.body, '', path);
  }
});

t.test('preflights from another origin, or to an endpoint a browser app does not call: no CORS headers', async (t) => {
  const refused = await preflight('/connect/token', otherOrigin, 'POST');
  t.equal(refused.status, 403);
  t.equal(refused.headers.get('access-control-allow-origin'), null);
  const introspection = await preflight('/connect/introspect', appOrigin, 'POST');
  t.not(introspection.status, 204, 'introspection is for APIs, not browser pages');
  t.equal(introspection.headers.get('access-control-allow-origin'), null);
});

t.test('answers to an allowed origin carry Access-Control-Allow-Origin and Vary; others do not', async (t) => {
  const token = async (origin?: string) =>
    fetch(gw.tokenUrl, {
      method: 'POST',
      headers: { ...form, ...(origin ? { origin } : {}) },
      body: 'grant_type=client_credentials&client_id=spa&scope=api1',
    });
  const allowed = await token(appOrigin);
  t.equal(allowed.status, 200);
  t.equal(allowed.headers.get('access-control-allow-origin'), appOrigin);
  t.equal(allowed.headers.get('vary'), 'Origin');
  t.match(allowed.headers.get('access-control-expose-headers'), /WWW-Authenticate/);
  const second = await token('http://localhost:3000');
  t.equal(second.headers.get('access-control-allow-origin'), 'http://localhost:3000', 'each listed origin');
  const other = await token(otherOrigin);
  t.equal(other.status, 200, 'CORS decides what a page may read, not who may call');
  t.equal(other.headers.get('access-control-allow-origin'), null);
  const none = await token();
  t.equal(none.headers.get('access-control-allow-origin'), null, 'no Origin, no CORS header');

  const failed = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { ...form, origin: appOrigin },
    body: 'grant_type=client_credentials&client_id=nobody',
  });
  t.equal(failed.status, 401);
  t.equal(failed.headers.get('access-control-allow-origin'), appOrigin, 'errors are readable by the page too');

  for (const path of ['/.well-known/openid-configuration', '/.well-known/openid-configuration/jwks']) {
    const res = await fetch(`${gw.url}${path}`, { headers: { origin: appOrigin } });
    t.equal(res.headers.get('access-control-allow-origin'), appOrigin, path);
  }
  const userInfo = await fetch(`${gw.url}/connect/userinfo`, { headers: { origin: appOrigin } });
  t.equal(userInfo.status, 401);
  t.equal(userInfo.headers.get('access-control-allow-origin'), appOrigin);

  const revocation = await fetch(`${gw.url}/connect/revocation`, {
    method: 'POST',
    headers: { ...form, origin: appOrigin },
    body: 'token=x&client_id=spa',
  });
  t.equal(revocation.status, 200);
  t.equal(revocation.headers.get('access-control-allow-origin'), appOrigin);
});

t.test(
  'every answer of a CORS endpoint says Vary: Origin, so a shared cache never serves one without CORS headers to the app',
  async (t) => {
    // Discovery and JWKS are `public, max-age`: a cache that stored the answer to a request without
    // Origin (an API fetching the JWKS) must not hand it to the browser app, which needs its CORS headers.
    for (const path of ['/.well-known/openid-configuration', '/.well-known/openid-configuration/jwks']) {
      for (const origin of [undefined, otherOrigin, appOrigin]) {
        const res = await fetch(`${gw.url}${path}`, { headers: origin === undefined ? {} : { origin } });
        t.equal(res.status, 200);
        t.match(res.headers.get('cache-control'), /^public, max-age=/, `${path}: cacheable`);
        t.equal(res.headers.get('vary'), 'Origin', `${path}, Origin ${origin ?? 'absent'}`);
      }
      const head = await fetch(`${gw.url}${path}`, { method: 'HEAD' });
      t.equal(head.headers.get('vary'), 'Origin', `${path}: HEAD too`);
      const post = await fetch(`${gw.url}${path}`, { method: 'POST' });
      t.same([post.status, post.headers.get('vary')], [405, 'Origin'], `${path}: an error too`);
    }
    for (const origin of [undefined, otherOrigin]) {
      const headers = { ...form, ...(origin === undefined ? {} : { origin }) };
      const token = await fetch(gw.tokenUrl, { method: 'POST', headers, body: 'grant_type=client_credentials&client_id=spa&scope=api1' });
      t.equal(token.headers.get('vary'), 'Origin', `token, Origin ${origin ?? 'absent'}`);
      t.equal(token.headers.get('access-control-allow-origin'), null);
      const revocation = await fetch(`${gw.url}/connect/revocation`, { method: 'POST', headers, body: 'token=x&client_id=spa' });
      t.equal(revocation.headers.get('vary'), 'Origin', `revocation, Origin ${origin ?? 'absent'}`);
      const userInfo = await fetch(`${gw.url}/connect/userinfo`, { headers: origin === undefined ? {} : { origin } });
      t.equal(userInfo.headers.get('vary'), 'Origin', `UserInfo, Origin ${origin ?? 'absent'}`);
    }
    const introspection = await fetch(`${gw.url}/connect/introspect`, {
      method: 'POST',
      headers: { ...form, origin: appOrigin },
      body: 'token=x',
    });
    t.equal(introspection.headers.get('vary'), null, 'introspection reads no Origin: nothing to vary on');
  },
);

t.test('a raw preflight answer is complete: no body, the connection stays usable', async (t) => {
  const conversation = await rawConversation(
    gw.port,
    `OPTIONS /connect/token HTTP/1.1\r\nHost: x\r\nOrigin: ${appOrigin}\r\nAccess-Control-Request-Method: POST\r\n\r\n` +
      'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n',
    1000,
  );
  t.same(conversation.statuses, [204, 200], 'the preflight, then the next request on the same connection');
  t.notMatch(splitFirstResponse(conversation.text).headers['content-length'] ?? '', /[1-9]/, 'no content');
});

t.test('without any allowedCorsOrigins no endpoint answers CORS', async (t) => {
  const plain = await startTestGateway(t);
  const res = await fetch(plain.tokenUrl, {
    method: 'POST',
    headers: { ...form, origin: appOrigin, authorization: basicAuthorization('m2m') },
    body: 'grant_type=client_credentials&scope=api1',
  });
  t.equal(res.status, 200);
  t.equal(res.headers.get('access-control-allow-origin'), null);
  t.equal(res.headers.get('vary'), null, 'and no Vary: the answer does not depend on Origin');
  const jwks = await fetch(`${plain.url}/.well-known/openid-configuration/jwks`, { headers: { origin: appOrigin } });
  t.equal(jwks.headers.get('vary'), null);
  const pre = await fetch(plain.tokenUrl, { method: 'OPTIONS', headers: { origin: appOrigin, 'access-control-request-method': 'POST' } });
  t.equal(pre.status, 405, 'OPTIONS is just another method there');
});

t.test('allowedCorsOrigins must be origins', async (t) => {
  const { validateConfig } = await import('../../../gateway/config/load.js');
  const { baseTestConfig } = await import('../../helpers/test_gateway.js');
  for (const bad of ['https://app.example/', 'https://app.example/path', 'ftp://app.example', 'app.example']) {
    const raw = baseTestConfig();
    (raw.clients as Record<string, unknown>[])[0] = { ...(raw.clients as Record<string, unknown>[])[0], allowedCorsOrigins: [bad] };
    let message = 'accepted';
    try {
      validateConfig(raw, { configDir: '/tmp', env: {} });
    } catch (err) {
      message = String(err);
    }
    t.match(message, /clients\[0\]\.allowedCorsOrigins\[0\]/, `${bad}: ${message}`);
  }
});
