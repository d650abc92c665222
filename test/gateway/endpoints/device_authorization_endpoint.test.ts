// `POST /connect/deviceauthorization` (RFC 8628 §3.1, §3.2) over HTTP, on the memory store and on
// a private redis-server (gateway/endpoints/device_authorization_endpoint.ts): who may ask, what scopes they
// get, and the exact shape of the answer. Polling is test/workers/grants/device_code.test.ts and
// test/e2e/device_code.test.ts; the /device page is test/gateway/pages/device_endpoint.test.ts.
import t, { type Test } from 'tap';
import { pino } from 'pino';
import * as uWS from 'uWebSockets.js';
import { ClientAuthenticator } from '../../../gateway/client_authentication/authenticator.js';
import { ClientAuthThrottle } from '../../../core/throttles.js';
import { clientSchema } from '../../../gateway/config/schema.js';
import { createDeviceAuthorizationEndpoint, deviceAuthorizationPath } from '../../../gateway/endpoints/device_authorization_endpoint.js';
import { ScopeRules } from '../../../core/rules/scope_rules.js';
import { registerClients } from '../../../core/client_model.js';
import { MemoryStore } from '../../../core/store/memory_store.js';
import type { StoreKey } from '../../../core/store/store.js';
import type { UserCodeRecord } from '../../../core/records/device_code_record.js';
import { sha256Secret, startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis_server.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';

const deviceGrant = 'urn:ietf:params:oauth:grant-type:device_code';
const form = 'application/x-www-form-urlencoded';
const userCodePattern = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;
const invalidClient = '{"error":"invalid_client","error_description":"Client authentication failed."}';
const unauthorizedClient = '{"error":"unauthorized_client","error_description":"The client is not allowed to use the device flow."}';
const invalidScope = (description: string) => JSON.stringify({ error: 'invalid_scope', error_description: description });

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

function patchFor(store: Record<string, unknown>) {
  return (raw: Record<string, unknown>) => {
    raw.store = store;
    // The 401 cases below must not trip the client authentication throttle.
    // Nor may the many authorizations below trip the device authorization rate
    // (test/gateway/endpoints/device_authorization_rate.test.ts has its own).
    raw.throttling = {
      clientAuthentication: { maxFailures: 1000, windowSeconds: 60 },
      deviceAuthorization: { maxRequests: 10_000, windowSeconds: 60 },
    };
    (raw.clients as unknown[]).push(
      {
        clientId: 'tv',
        clientName: 'Living-room TV',
        requireClientSecret: false,
        allowedGrantTypes: [deviceGrant, 'refresh_token'],
        allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
        allowOfflineAccess: true,
        pollingInterval: 7,
        deviceCodeLifetime: 120,
      },
      {
        clientId: 'console',
        clientSecrets: [{ value: sha256Secret('console-secret') }],
        allowedGrantTypes: [deviceGrant],
        allowedScopes: ['api1', 'api2'],
      },
      {
        clientId: 'no-offline',
        requireClientSecret: false,
        allowedGrantTypes: [deviceGrant],
        // Config refuses offline_access in allowedScopes without allowOfflineAccess.
        allowedScopes: ['api1'],
        allowOfflineAccess: false,
      },
    );
  };
}

async function post(gw: TestGateway, params: Record<string, string>, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${gw.url}/connect/deviceauthorization`, {
    method: 'POST',
    headers: { 'content-type': form, ...headers },
    body: new URLSearchParams(params).toString(),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

function assertNoStoreJson(t: Test, answer: Answer): void {
  t.match(answer.headers.get('content-type'), /^application\/json/);
  t.equal(answer.headers.get('cache-control'), 'no-store');
  t.equal(answer.headers.get('pragma'), 'no-cache');
}

function assertError(t: Test, answer: Answer, status: number, body: string): void {
  t.equal(answer.status, status, answer.text);
  t.equal(answer.text, body);
  assertNoStoreJson(t, answer);
}

function assertAuthorization(t: Test, gw: TestGateway, answer: Answer, expiresIn: number, interval: number): DeviceAuthorization {
  t.equal(answer.status, 200, answer.text);
  assertNoStoreJson(t, answer);
  const body = JSON.parse(answer.text) as DeviceAuthorization;
  t.same(Object.keys(body).sort(), ['device_code', 'expires_in', 'interval', 'user_code', 'verification_uri', 'verification_uri_complete']);
  t.match(body.device_code, /^[A-Za-z0-9_-]+$/, 'device_code is base64url');
  t.ok(Buffer.from(body.device_code, 'base64url').length * 8 >= 256, 'device_code carries at least 256 bits');
  t.match(body.user_code, userCodePattern);
  t.equal(body.verification_uri, `${gw.config.issuer}/device`);
  t.equal(body.verification_uri_complete, `${gw.config.issuer}/device?user_code=${body.user_code}`);
  t.equal(body.expires_in, expiresIn);
  t.equal(body.interval, interval);
  return body;
}

function endpointRules(t: Test, gw: TestGateway): void {
  t.test('a public client authenticates with client_id alone', async (t) => {
    assertAuthorization(t, gw, await post(gw, { client_id: 'tv', scope: 'openid api1 offline_access' }), 120, 7);
  });

  t.test('a confidential client authenticates with Basic or with client_secret in the body', async (t) => {
    assertAuthorization(
      t,
      gw,
      await post(gw, { scope: 'api1' }, { authorization: basicAuthorization('console', 'console-secret') }),
      300,
      5,
    );
    assertAuthorization(t, gw, await post(gw, { client_id: 'console', client_secret: 'console-secret', scope: 'api2' }), 300, 5);
  });

  t.test("expires_in is the client's deviceCodeLifetime and interval its pollingInterval (defaults 300 and 5)", async (t) => {
    assertAuthorization(t, gw, await post(gw, { client_id: 'tv' }), 120, 7);
    assertAuthorization(t, gw, await post(gw, { client_id: 'no-offline' }), 300, 5);
  });

  t.test('scope may be omitted or empty', async (t) => {
    assertAuthorization(t, gw, await post(gw, { client_id: 'tv' }), 120, 7);
    assertAuthorization(t, gw, await post(gw, { client_id: 'tv', scope: '' }), 120, 7);
  });

  t.test('every answer is new: 100 authorizations give 100 device codes and 100 user codes over the whole alphabet', async (t) => {
    const answers = await Promise.all(Array.from({ length: 100 }, () => post(gw, { client_id: 'tv', scope: 'api1' })));
    const bodies = answers.map((a) => JSON.parse(a.text) as DeviceAuthorization);
    t.ok(answers.every((a) => a.status === 200));
    t.equal(new Set(bodies.map((b) => b.device_code)).size, 100);
    t.equal(new Set(bodies.map((b) => b.user_code)).size, 100);
    t.ok(bodies.every((b) => userCodePattern.test(b.user_code)));
    // 800 letters drawn from 20: a letter never drawn would mean a skewed draw (p ≈ 20·0.95^800).
    const letters = new Set(bodies.flatMap((b) => [...b.user_code.replace('-', '')]));
    t.equal([...letters].sort().join(''), 'BCDFGHJKLMNPQRSTVWXZ');
  });

  t.test('a client not allowed the device grant is unauthorized_client', async (t) => {
    assertError(t, await post(gw, { scope: 'api1' }, { authorization: basicAuthorization('m2m', 'secret') }), 400, unauthorizedClient);
    assertError(t, await post(gw, { client_id: 'public-cc' }), 400, unauthorizedClient);
  });

  t.test('an unknown or not-allowed scope is invalid_scope', async (t) => {
    assertError(t, await post(gw, { client_id: 'tv', scope: 'api1 nope' }), 400, invalidScope('A requested scope is not registered.'));
    assertError(t, await post(gw, { client_id: 'tv', scope: 'api2' }), 400, invalidScope('The client is not allowed a requested scope.'));
    assertError(
      t,
      await post(gw, { scope: 'openid' }, { authorization: basicAuthorization('console', 'console-secret') }),
      400,
      invalidScope('The client is not allowed a requested scope.'),
    );
  });

  t.test('offline_access without allowOfflineAccess is invalid_scope', async (t) => {
    assertError(
      t,
      await post(gw, { client_id: 'no-offline', scope: 'api1 offline_access' }),
      400,
      invalidScope('The client is not allowed a requested scope.'),
    );
    // Omitted, the default scopes simply leave it out.
    assertAuthorization(t, gw, await post(gw, { client_id: 'no-offline' }), 300, 5);
  });

  t.test('bad client authentication is 401 invalid_client, with a Basic challenge when Basic was used', async (t) => {
    const wrongBasic = await post(gw, { scope: 'api1' }, { authorization: basicAuthorization('console', 'wrong') });
    assertError(t, wrongBasic, 401, invalidClient);
    t.equal(wrongBasic.headers.get('www-authenticate'), `Basic realm="${gw.config.issuer}"`);
    const attempts: Record<string, string>[] = [
      { client_id: 'console', client_secret: 'wrong' },
      { client_id: 'console' },
      { client_id: 'nobody' },
      { client_id: 'nobody', client_secret: 'secret' },
      {},
    ];
    for (const params of attempts) {
      const answer = await post(gw, params);
      assertError(t, answer, 401, invalidClient);
      t.equal(answer.headers.get('www-authenticate'), null, `no challenge without Basic: ${JSON.stringify(params)}`);
    }
  });

  t.test('two client authentication methods, a duplicate parameter or a non-form body is invalid_request', async (t) => {
    assertError(
      t,
      await post(
        gw,
        { client_id: 'console', client_secret: 'console-secret' },
        { authorization: basicAuthorization('console', 'console-secret') },
      ),
      400,
      '{"error":"invalid_request","error_description":"The request uses more than one client authentication method."}',
    );
    const duplicate = await fetch(`${gw.url}/connect/deviceauthorization`, {
      method: 'POST',
      headers: { 'content-type': form },
      body: 'client_id=tv&scope=api1&scope=openid',
    });
    t.equal(duplicate.status, 400);
    t.equal(await duplicate.text(), '{"error":"invalid_request","error_description":"A parameter was sent more than once."}');
    const json = await fetch(`${gw.url}/connect/deviceauthorization`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"client_id":"tv"}',
    });
    t.equal(json.status, 400);
    t.equal(await json.text(), '{"error":"invalid_request","error_description":"The request must be application/x-www-form-urlencoded."}');
  });

  t.test('any method but POST is 405 with Allow: POST', async (t) => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const res = await fetch(`${gw.url}/connect/deviceauthorization?client_id=tv`, { method });
      t.equal(res.status, 405, method);
      t.equal(res.headers.get('allow'), 'POST');
      t.equal(res.headers.get('cache-control'), 'no-store');
      t.equal(await res.text(), '{"error":"invalid_request","error_description":"The device authorization endpoint accepts POST only."}');
    }
  });

  t.test('the answer is usable: the device code polls as authorization_pending', async (t) => {
    const device = JSON.parse((await post(gw, { client_id: 'tv', scope: 'api1' })).text) as DeviceAuthorization;
    const res = await fetch(gw.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': form },
      body: new URLSearchParams({ grant_type: deviceGrant, client_id: 'tv', device_code: device.device_code }).toString(),
    });
    t.equal(res.status, 400);
    t.equal(await res.text(), '{"error":"authorization_pending","error_description":"The user has not finished yet."}');
  });

  t.test('discovery lists the device authorization endpoint and the device grant type', async (t) => {
    const res = await fetch(`${gw.url}/.well-known/openid-configuration`);
    const document = (await res.json()) as Record<string, unknown>;
    t.equal(document.device_authorization_endpoint, `${gw.config.issuer}/connect/deviceauthorization`);
    t.ok((document.grant_types_supported as string[]).includes(deviceGrant));
  });
}

// Gateways take seconds to boot on a loaded machine: both start at once, once per file. The Redis
// command timeout is generous: at 200 ms a full CI run once answered an ordinary authorization
// 503 (a starved worker missed the deadline); the outage subtest below only needs some timeout.
const redis: RedisServer = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);
const [memoryGateway, redisGateway] = await Promise.all([
  startTestGateway(t, { patch: patchFor({ type: 'memory' }) }),
  startTestGateway(t, { patch: patchFor({ type: 'redis', url: redis.url, commandTimeoutMs: 1000 }) }),
]);

// The two stores share nothing (own gateway, own store, own throttles): run them side by side.
t.jobs = 2;
t.test('memory store', async (t) => {
  endpointRules(t, memoryGateway);
});

t.test('redis store', async (t) => {
  endpointRules(t, redisGateway);

  const skip = redis.managed ? false : 'the fallback redis-server cannot be paused';
  t.test('a store that does not answer is 503 temporarily_unavailable with Retry-After, never a code', { skip }, async (t) => {
    const gw = redisGateway;
    redis.pause();
    let answer: Answer;
    try {
      answer = await post(gw, { client_id: 'tv', scope: 'api1' });
    } finally {
      redis.resume();
    }
    assertError(
      t,
      answer,
      503,
      '{"error":"temporarily_unavailable","error_description":"The service is temporarily unavailable. Retry later."}',
    );
    t.equal(answer.headers.get('retry-after'), '2');
    // The client reconnects on its own; the next request after the outage is served.
    const until = Date.now() + 5000;
    let next = await post(gw, { client_id: 'tv', scope: 'api1' });
    while (next.status === 503 && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      next = await post(gw, { client_id: 'tv', scope: 'api1' });
    }
    assertAuthorization(t, gw, next, 120, 7);
  });
});

/** A memory store on which the first `collisions` user codes drawn are already taken. */
class CollidingStore extends MemoryStore {
  readonly drawn: string[] = [];
  constructor(private collisions: number) {
    super();
  }

  override async putIfAbsent<T>(key: StoreKey, value: T, ttlMs: number): Promise<T> {
    if (key.kind !== 'uc') return super.putIfAbsent(key, value, ttlMs);
    this.drawn.push(key.id);
    if (this.collisions-- > 0) {
      const someoneElses: UserCodeRecord = { deviceKey: { kind: 'dc', id: `other-${this.collisions}`, family: 'other' }, clientId: 'tv' };
      return someoneElses as T;
    }
    return super.putIfAbsent(key, value, ttlMs);
  }
}

t.test('user code collisions, on the endpoint alone', async (t) => {
  const clients = registerClients([
    clientSchema.parse({ clientId: 'tv', requireClientSecret: false, allowedGrantTypes: [deviceGrant], allowedScopes: ['api1'] }),
  ]);
  const start = async (store: MemoryStore): Promise<string> => {
    t.teardown(() => store.close());
    const app = uWS.App();
    app.any(
      deviceAuthorizationPath,
      createDeviceAuthorizationEndpoint({
        issuer: 'http://tessera.test',
        authenticator: new ClientAuthenticator(clients),
        throttle: new ClientAuthThrottle(store, { maxFailures: 10, windowSeconds: 60 }, pino({ level: 'silent' })),
        scopes: new ScopeRules({
          identityResources: [],
          apiScopes: [{ name: 'api1' }],
          apiResources: [{ name: 'urn:api1', scopes: ['api1'] }],
        }),
        store,
        rate: { maxRequests: 1000, windowSeconds: 60 },
      }),
    );
    const socket = await new Promise<uWS.us_listen_socket>((resolve, reject) =>
      app.listen('127.0.0.1', 0, (listening) => (listening === false ? reject(new Error('cannot listen')) : resolve(listening))),
    );
    t.teardown(() => uWS.us_listen_socket_close(socket));
    return `http://127.0.0.1:${uWS.us_socket_local_port(socket as unknown as uWS.us_socket)}${deviceAuthorizationPath}`;
  };
  const ask = async (url: string): Promise<Answer> => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': form }, body: 'client_id=tv&scope=api1' });
    return { status: res.status, headers: res.headers, text: await res.text() };
  };

  t.test('a user code that is already taken is drawn again', async (t) => {
    const store = new CollidingStore(4);
    const answer = await ask(await start(store));
    t.equal(answer.status, 200, answer.text);
    t.equal(store.drawn.length, 5, 'four taken, the fifth is free');
    t.equal(new Set(store.drawn).size, 5, 'each attempt draws a new code');
    const body = JSON.parse(answer.text) as DeviceAuthorization;
    t.equal(await store.get<UserCodeRecord>({ kind: 'uc', id: store.drawn[4] as string }).then((r) => r?.clientId), 'tv');
    t.match(body.user_code, userCodePattern);
  });

  t.test('five collisions in a row answer 500 server_error instead of leaving the request hanging', async (t) => {
    const store = new CollidingStore(5);
    const answer = await ask(await start(store));
    assertError(t, answer, 500, '{"error":"server_error","error_description":"The server could not complete the request."}');
    t.equal(store.drawn.length, 5);
  });
});
