import t, { type Test } from 'tap';
import { connect } from 'node:net';
import { appendixB, startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';
import { rawRequest } from '../../helpers/raw_http.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';

const form = 'application/x-www-form-urlencoded';

async function post(gw: TestGateway, body: string | Uint8Array, headers: Record<string, string> = {}) {
  const res = await fetch(gw.tokenUrl, { method: 'POST', headers: { 'content-type': form, ...headers }, body });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

function assertNoCacheJson(t: Test, headers: Headers) {
  t.equal(headers.get('cache-control'), 'no-store');
  t.equal(headers.get('pragma'), 'no-cache');
  t.match(headers.get('content-type'), /^application\/json/);
}

t.test('token endpoint', async (t) => {
  const gw = await startTestGateway(t);

  t.test('issues an access token to a client authenticated with Basic', async (t) => {
    const r = await post(gw, 'grant_type=client_credentials', { authorization: basicAuthorization('m2m', 'secret') });
    t.equal(r.status, 200);
    assertNoCacheJson(t, r.headers);
    const body = JSON.parse(r.text) as Record<string, unknown>;
    t.same(Object.keys(body).sort(), ['access_token', 'expires_in', 'scope', 'token_type']);
    t.equal(body.token_type, 'Bearer');
    t.equal(body.expires_in, 600);
    t.equal(body.scope, 'api1 api2');
    t.match(body.access_token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
  });

  t.test('issues a token to a client authenticated in the body', async (t) => {
    const r = await post(gw, 'grant_type=client_credentials&client_id=m2m&client_secret=secret&scope=api2');
    t.equal(r.status, 200);
    t.equal((JSON.parse(r.text) as { scope: string }).scope, 'api2');
  });

  t.test('accepts the RFC 6749 Appendix B client through Basic', async (t) => {
    const r = await post(gw, 'grant_type=client_credentials', { authorization: basicAuthorization(appendixB.clientId, appendixB.secret) });
    t.equal(r.status, 200, r.text);
  });

  t.test('accepts a public client by client_id alone', async (t) => {
    const r = await post(gw, 'grant_type=client_credentials&client_id=public-cc');
    t.equal(r.status, 200, r.text);
  });

  t.test('accepts a chunked body', async (t) => {
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('grant_type=client'));
        controller.enqueue(new TextEncoder().encode('_credentials&scope=api1'));
        controller.close();
      },
    });
    const res = await fetch(gw.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': form, authorization: basicAuthorization('m2m', 'secret') },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    t.equal(res.status, 200);
    t.equal(((await res.json()) as { scope: string }).scope, 'api1');
  });

  t.test('answers 405 with Allow to other methods', async (t) => {
    const res = await fetch(gw.tokenUrl);
    t.equal(res.status, 405);
    t.equal(res.headers.get('allow'), 'POST');
    assertNoCacheJson(t, res.headers);
    t.same(await res.json(), { error: 'invalid_request', error_description: 'The token endpoint accepts POST only.' });
  });

  t.test('refuses a body that is not form-encoded', async (t) => {
    const r = await post(gw, '{"grant_type":"client_credentials"}', {
      'content-type': 'application/json',
      authorization: basicAuthorization('m2m', 'secret'),
    });
    t.equal(r.status, 400);
    assertNoCacheJson(t, r.headers);
    t.same(JSON.parse(r.text), { error: 'invalid_request', error_description: 'The request must be application/x-www-form-urlencoded.' });
  });

  t.test('accepts a UTF-8 charset and refuses another', async (t) => {
    const ok = await post(gw, 'grant_type=client_credentials', {
      'content-type': `${form}; charset=UTF-8`,
      authorization: basicAuthorization('m2m', 'secret'),
    });
    t.equal(ok.status, 200);
    const bad = await post(gw, 'grant_type=client_credentials', {
      'content-type': `${form}; charset=iso-8859-1`,
      authorization: basicAuthorization('m2m', 'secret'),
    });
    t.equal(bad.status, 400);
  });

  t.test('refuses bad percent-encoding and invalid UTF-8', async (t) => {
    for (const body of ['grant_type=client_credentials&scope=%zz', 'grant_type=client_credentials&scope=%C3%28']) {
      const r = await post(gw, body, { authorization: basicAuthorization('m2m', 'secret') });
      t.equal(r.status, 400);
      t.same(JSON.parse(r.text), { error: 'invalid_request', error_description: 'The request body is not valid form-urlencoded UTF-8.' });
    }
    const raw = await post(gw, Uint8Array.of(...new TextEncoder().encode('grant_type=client_credentials&x='), 0xff), {
      authorization: basicAuthorization('m2m', 'secret'),
    });
    t.equal(raw.status, 400);
  });

  t.test('refuses a repeated parameter', async (t) => {
    const r = await post(gw, 'grant_type=client_credentials&scope=api1&scope=api2', { authorization: basicAuthorization('m2m', 'secret') });
    t.equal(r.status, 400);
    t.same(JSON.parse(r.text), { error: 'invalid_request', error_description: 'A parameter was sent more than once.' });
  });

  t.test('refuses more parameters than the cap', async (t) => {
    const body = `grant_type=client_credentials&${Array.from({ length: 200 }, (_, i) => `p${i}=1`).join('&')}`;
    const r = await post(gw, body, { authorization: basicAuthorization('m2m', 'secret') });
    t.equal(r.status, 400);
    t.same(JSON.parse(r.text), { error: 'invalid_request', error_description: 'The request has too many parameters.' });
  });

  t.test('answers 413 to a 1 MiB body with Content-Length', async (t) => {
    const body = Buffer.alloc(1024 * 1024, 'a');
    const r = await rawRequest(gw.port, [
      `POST /connect/token HTTP/1.1\r\nHost: x\r\nContent-Type: ${form}\r\nContent-Length: ${body.length}\r\n\r\n`,
      body,
    ]);
    t.equal(r.status, 413);
    t.equal(r.headers['cache-control'], 'no-store');
    t.same(JSON.parse(r.body), { error: 'invalid_request', error_description: 'The request body is too large.' });
  });

  t.test('answers 413 to a 1 MiB chunked body', async (t) => {
    const chunk = Buffer.alloc(16 * 1024, 'a');
    const parts: (string | Buffer)[] = [
      `POST /connect/token HTTP/1.1\r\nHost: x\r\nContent-Type: ${form}\r\nTransfer-Encoding: chunked\r\n\r\n`,
    ];
    for (let i = 0; i < 64; i++) parts.push(`${chunk.length.toString(16)}\r\n`, chunk, '\r\n');
    parts.push('0\r\n\r\n');
    const r = await rawRequest(gw.port, parts);
    t.equal(r.status, 413);
    t.same(JSON.parse(r.body), { error: 'invalid_request', error_description: 'The request body is too large.' });
  });

  t.test('survives clients that abort in the middle of the body', async (t) => {
    await Promise.all(
      Array.from(
        { length: 20 },
        () =>
          new Promise<void>((resolve) => {
            const socket = connect(gw.port, '127.0.0.1', () => {
              socket.write(`POST /connect/token HTTP/1.1\r\nHost: x\r\nContent-Type: ${form}\r\nContent-Length: 500\r\n\r\ngrant_type=cli`);
              setTimeout(() => socket.destroy(), 20);
            });
            socket.on('close', () => resolve());
            socket.on('error', () => {});
          }),
      ),
    );
    const r = await post(gw, 'grant_type=client_credentials', { authorization: basicAuthorization('m2m', 'secret') });
    t.equal(r.status, 200);
  });

  t.test('gives an unknown client and a wrong secret byte-identical 401 bodies', async (t) => {
    const unknown = await post(gw, 'grant_type=client_credentials', { authorization: basicAuthorization('nobody', 'secret') });
    const wrong = await post(gw, 'grant_type=client_credentials', { authorization: basicAuthorization('m2m', 'wrong') });
    t.equal(unknown.status, 401);
    t.equal(wrong.status, 401);
    t.equal(unknown.text, wrong.text);
    t.equal(unknown.text, '{"error":"invalid_client","error_description":"Client authentication failed."}');
    assertNoCacheJson(t, wrong.headers);
  });

  t.test('sends WWW-Authenticate exactly when Basic was used', async (t) => {
    const withBasic = await post(gw, 'grant_type=client_credentials', { authorization: basicAuthorization('m2m', 'wrong') });
    t.equal(withBasic.headers.get('www-authenticate'), `Basic realm="${gw.config.issuer}"`);
    const inBody = await post(gw, 'grant_type=client_credentials&client_id=m2m&client_secret=wrong');
    t.equal(inBody.status, 401);
    t.equal(inBody.headers.get('www-authenticate'), null);
  });

  t.test('refuses a confidential client without its secret', async (t) => {
    const r = await post(gw, 'grant_type=client_credentials&client_id=m2m');
    t.equal(r.status, 401);
    t.equal(JSON.parse(r.text).error, 'invalid_client');
  });

  t.test('refuses a request that names no client', async (t) => {
    const r = await post(gw, 'grant_type=client_credentials');
    t.equal(r.status, 401);
    t.equal(JSON.parse(r.text).error, 'invalid_client');
  });

  t.test('refuses an expired secret and accepts the current one', async (t) => {
    t.equal((await post(gw, 'grant_type=client_credentials', { authorization: basicAuthorization('rolling', 'expired') })).status, 401);
    t.equal((await post(gw, 'grant_type=client_credentials', { authorization: basicAuthorization('rolling', 'current') })).status, 200);
  });

  t.test('refuses a disabled client', async (t) => {
    const r = await post(gw, 'grant_type=client_credentials', { authorization: basicAuthorization('disabled', 'secret') });
    t.equal(r.status, 401);
    t.equal(r.text, '{"error":"invalid_client","error_description":"Client authentication failed."}');
  });

  t.test('refuses two client authentication methods in one request', async (t) => {
    const r = await post(gw, 'grant_type=client_credentials&client_secret=secret', { authorization: basicAuthorization('m2m', 'secret') });
    t.equal(r.status, 400);
    t.same(JSON.parse(r.text), {
      error: 'invalid_request',
      error_description: 'The request uses more than one client authentication method.',
    });
  });

  t.test('refuses a missing grant_type', async (t) => {
    const r = await post(gw, 'scope=api1', { authorization: basicAuthorization('m2m', 'secret') });
    t.equal(r.status, 400);
    t.same(JSON.parse(r.text), { error: 'invalid_request', error_description: 'The grant_type parameter is missing.' });
  });

  t.test('refuses an unknown grant type', async (t) => {
    const r = await post(gw, 'grant_type=magic', { authorization: basicAuthorization('m2m', 'secret') });
    t.equal(r.status, 400);
    t.same(JSON.parse(r.text), { error: 'unsupported_grant_type', error_description: 'The grant type is not supported.' });
  });

  t.test('refuses a grant type the client is not allowed', async (t) => {
    const r = await post(gw, 'grant_type=client_credentials', { authorization: basicAuthorization('user-app', 'secret') });
    t.equal(r.status, 400);
    t.same(JSON.parse(r.text), { error: 'unauthorized_client', error_description: 'The client is not allowed to use this grant type.' });
  });

  t.test('refuses unknown, unallowed and identity scopes', async (t) => {
    const cases: [string, string][] = [
      ['nope', 'A requested scope is not registered.'],
      ['api1 nope', 'A requested scope is not registered.'],
      ['openid', 'The client is not allowed a requested scope.'],
      ['offline_access', 'The client is not allowed a requested scope.'],
    ];
    for (const [scope, description] of cases) {
      const r = await post(gw, `grant_type=client_credentials&scope=${encodeURIComponent(scope)}`, {
        authorization: basicAuthorization('m2m', 'secret'),
      });
      t.equal(r.status, 400, scope);
      assertNoCacheJson(t, r.headers);
      t.same(JSON.parse(r.text), { error: 'invalid_scope', error_description: description }, scope);
    }
    const idOnly = await post(gw, 'grant_type=client_credentials&scope=openid', {
      authorization: basicAuthorization('identity-only', 'secret'),
    });
    t.same(JSON.parse(idOnly.text), { error: 'invalid_scope', error_description: 'A requested scope is not allowed for this grant type.' });
    const idOnlyDefault = await post(gw, 'grant_type=client_credentials', { authorization: basicAuthorization('identity-only', 'secret') });
    t.same(JSON.parse(idOnlyDefault.text), {
      error: 'invalid_scope',
      error_description: 'The client has no scope allowed for this grant type.',
    });
  });

  t.test('answers unknown paths with a JSON 404', async (t) => {
    const res = await fetch(`${gw.url}/nope`);
    t.equal(res.status, 404);
    t.same(await res.json(), { error: 'not_found' });
  });

  t.test('reports health and readiness', async (t) => {
    const health = await fetch(`${gw.url}/healthz`);
    t.equal(health.status, 200);
    t.same(await health.json(), { status: 'ok' });
    const ready = await fetch(`${gw.url}/readyz`);
    t.equal(ready.status, 200);
    t.same(await ready.json(), { status: 'ready' });
  });

  t.test('serves discovery and a JWKS without private members', async (t) => {
    const res = await fetch(`${gw.url}/.well-known/openid-configuration`);
    t.equal(res.status, 200);
    const doc = (await res.json()) as Record<string, unknown>;
    t.equal(doc.issuer, gw.config.issuer);
    t.equal(doc.token_endpoint, `${gw.config.issuer}/connect/token`);
    t.equal(doc.jwks_uri, `${gw.config.issuer}/.well-known/openid-configuration/jwks`);
    t.same(doc.grant_types_supported, [
      'authorization_code',
      'client_credentials',
      'password',
      'refresh_token',
      'urn:ietf:params:oauth:grant-type:device_code',
    ]);
    t.equal(doc.introspection_endpoint, `${gw.config.issuer}/connect/introspect`);
    t.equal(doc.revocation_endpoint, `${gw.config.issuer}/connect/revocation`);
    t.same(doc.token_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none']);
    t.same(doc.scopes_supported, ['openid', 'profile', 'api1', 'api2', 'offline_access']);
    t.same(doc.code_challenge_methods_supported, ['S256']);
    t.same(doc.id_token_signing_alg_values_supported, ['ES256']);
    t.same(doc.response_types_supported, ['code']);
    // Request objects by value (RFC 9101); a request_uri only from /connect/par, none fetched by
    // reference: OIDC Discovery §3 reads an absent request_uri_parameter_supported as true.
    t.equal(doc.request_parameter_supported, true);
    t.equal(doc.request_uri_parameter_supported, false);
    t.equal(doc.pushed_authorization_request_endpoint, `${gw.config.issuer}/connect/par`);
    const jwks = (await (await fetch(`${gw.url}/.well-known/openid-configuration/jwks`)).json()) as { keys: Record<string, unknown>[] };
    t.equal(jwks.keys.length, 1);
    for (const key of jwks.keys) {
      t.equal(key.d, undefined);
      t.equal(key.alg, 'ES256');
      t.equal(key.use, 'sig');
      t.type(key.kid, 'string');
    }
  });

  t.test('answers every one of 2000 requests sent over 64 connections at once', async (t) => {
    const auth = { authorization: basicAuthorization('m2m', 'secret') };
    const statuses = new Map<number, number>();
    let next = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < 2000) {
          next++;
          const r = await post(gw, 'grant_type=client_credentials', auth);
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        }
      }),
    );
    t.same([...statuses], [[200, 2000]]);
    t.equal(await metricValue(gw, 'tessera_worker_requests_in_flight'), 0, 'nothing is left in flight');
  });

  t.test('counts token responses by endpoint, grant type and status in Prometheus metrics', async (t) => {
    const unauthorized = 'tessera_http_requests_total{endpoint="token",grant_type="",status="401"}';
    const issued = 'tessera_http_requests_total{endpoint="token",grant_type="client_credentials",status="200"}';
    const before = await metricValue(gw, unauthorized);
    await post(gw, 'grant_type=client_credentials', { authorization: basicAuthorization('m2m', 'wrong') });
    await post(gw, 'grant_type=client_credentials', { authorization: basicAuthorization('m2m', 'wrong') });
    t.equal(await metricValue(gw, unauthorized), before + 2);
    t.ok((await metricValue(gw, issued)) > 0);
    t.ok((await metricValue(gw, 'tessera_http_request_duration_seconds_count{endpoint="token",grant_type="client_credentials"}')) > 0);
    const res = await fetch(`${gw.managementUrl}/metrics`);
    t.match(res.headers.get('content-type'), /^text\/plain/);
    t.match(await res.text(), /tessera_worker_requests_in_flight 0/);
  });

  t.test('a grant type nobody registered is not a metrics label', async (t) => {
    await post(gw, 'grant_type=made_up_by_a_caller', { authorization: basicAuthorization('m2m', 'secret') });
    const text = await (await fetch(`${gw.managementUrl}/metrics`)).text();
    t.notMatch(text, /made_up_by_a_caller/);
  });

  t.test('/metrics is not on the public port', async (t) => {
    t.equal((await fetch(`${gw.url}/metrics`)).status, 404);
  });
});

t.test('worker failures', async (t) => {
  const fixtures = ['crash_grant', 'throw_grant', 'slow_grant'].map((f) => new URL(`../../fixtures/grants/${f}.ts`, import.meta.url).href);
  const gw = await startTestGateway(t, {
    grantModules: fixtures,
    extraGrantTypes: ['test_crash', 'test_throw', 'test_slow'],
    patch: (raw) => {
      (raw.clients as Record<string, unknown>[]).push({
        clientId: 'tester',
        clientSecrets: [{ value: 'K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols=' }],
        allowedGrantTypes: ['client_credentials', 'test_crash', 'test_throw', 'test_slow'],
        allowedScopes: ['api1'],
      });
      raw.workers = { threads: 1, maxQueue: 2 };
    },
  });
  const auth = { authorization: basicAuthorization('tester', 'secret') };

  t.test('a grant that throws gives 500 server_error without detail, and the next request succeeds', async (t) => {
    const r = await post(gw, 'grant_type=test_throw', auth);
    t.equal(r.status, 500);
    assertNoCacheJson(t, r.headers);
    t.equal(r.text, '{"error":"server_error","error_description":"The server could not complete the request."}');
    t.equal((await post(gw, 'grant_type=client_credentials', auth)).status, 200);
  });

  t.test('a worker that dies gives 500 server_error, and the pool recovers', async (t) => {
    const r = await post(gw, 'grant_type=test_crash', auth);
    t.equal(r.status, 500);
    t.equal(JSON.parse(r.text).error, 'server_error');
    const next = await post(gw, 'grant_type=client_credentials', auth);
    t.equal(next.status, 200, next.text);
  });

  t.test('a full queue gives a fast 503 with Retry-After', async (t) => {
    const results = await Promise.all(Array.from({ length: 6 }, () => post(gw, 'grant_type=test_slow', auth)));
    const shed = results.filter((r) => r.status === 503);
    const served = results.filter((r) => r.status === 200);
    t.equal(served.length, 2, 'the queue admits maxQueue requests');
    t.equal(shed.length, 4);
    for (const r of shed) {
      t.equal(r.headers.get('retry-after'), '1');
      assertNoCacheJson(t, r.headers);
      t.same(JSON.parse(r.text), {
        error: 'temporarily_unavailable',
        error_description: 'The service is temporarily unavailable. Retry later.',
      });
    }
  });
});

async function metricValue(gw: TestGateway, series: string): Promise<number> {
  const text = await (await fetch(`${gw.managementUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}
