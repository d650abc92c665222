// RFC 7592 updates racing the admin API on two gateways over one Redis (docs/operations.md, "Admin
// API", "Concurrent changes"): a registered client deleted by an admin while its own PUTs run stays
// deleted (each PUT answered 200 before it, or 401 as an unknown client after), and one disabled by
// an admin while they run stays disabled, its other changes kept.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { callbackUri } from '../../helpers/authorize_flow.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';

t.setTimeout(90_000);
const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);
const initialAccessToken = 'initial-access-token-for-the-update-race';
const adminToken = 'admin-token-for-the-registration-update-race';
const dir = t.testdir();
writeFileSync(path.join(dir, 'initial.token'), `${initialAccessToken}\n`);
writeFileSync(path.join(dir, 'admin.token'), `${adminToken}\n`);
const keyPrefix = `registration-race-${process.pid}:`;
const start = (): Promise<TestGateway> =>
  startTestGateway(t, {
    patch: (raw) => {
      raw.store = { type: 'redis', url: redis.url, keyPrefix, commandTimeoutMs: 5000 };
      raw.clientRegistry = { store: true };
      raw.admin = { tokenFile: path.join(dir, 'admin.token') };
      raw.dynamicClientRegistration = {
        enabled: true,
        initialAccessTokenFile: path.join(dir, 'initial.token'),
        policy: {
          grantTypes: ['authorization_code'],
          scopes: ['openid', 'api1'],
          redirectUriSchemes: ['http'],
          tokenEndpointAuthMethods: ['none'],
        },
      };
      raw.throttling = { clientRegistration: { maxRequests: 100, windowSeconds: 3600 } };
    },
  });
const [a, b] = await Promise.all([start(), start()]);
const metadata = {
  redirect_uris: [callbackUri],
  grant_types: ['authorization_code'],
  scope: 'openid api1',
  token_endpoint_auth_method: 'none',
};

async function register(): Promise<{ clientId: string; uri: string; token: string }> {
  const res = await fetch(`${a.url}/connect/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${initialAccessToken}` },
    body: JSON.stringify(metadata),
  });
  if (res.status !== 201) throw new Error(`registration: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { client_id: string; registration_client_uri: string; registration_access_token: string };
  return { clientId: body.client_id, uri: body.registration_client_uri, token: body.registration_access_token };
}

/** RFC 7592 §2.2 on `gateway` (the client URI names the issuer: the path is kept, the gateway chosen). */
async function put(gateway: TestGateway, client: { clientId: string; uri: string; token: string }, name: string): Promise<number> {
  const res = await fetch(`${gateway.url}${new URL(client.uri).pathname}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${client.token}` },
    body: JSON.stringify({ ...metadata, client_id: client.clientId, client_name: name }),
  });
  await res.arrayBuffer();
  return res.status;
}

async function admin(
  gateway: TestGateway,
  method: string,
  clientId: string,
  body?: unknown,
): Promise<{ status: number; client?: Record<string, unknown> }> {
  const res = await fetch(`${gateway.managementUrl}/admin/clients/${encodeURIComponent(clientId)}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const parsed = text === '' ? {} : (JSON.parse(text) as { client?: Record<string, unknown> });
  return parsed.client === undefined ? { status: res.status } : { status: res.status, client: parsed.client };
}

t.test('RFC 7592 PUTs racing an admin DELETE: the client stays deleted', async (t) => {
  for (let round = 0; round < 5; round += 1) {
    const client = await register();
    const puts = Array.from({ length: 10 }, (_, i) => put(i % 2 === 0 ? a : b, client, `name ${i}`));
    const deleted = admin(round % 2 === 0 ? b : a, 'DELETE', client.clientId);
    const statuses = await Promise.all(puts);
    t.equal((await deleted).status, 204, `round ${round}: deleted`);
    t.same(
      statuses.filter((status) => status !== 200 && status !== 401),
      [],
      `round ${round}: each PUT 200 or 401`,
    );
    t.equal((await admin(a, 'GET', client.clientId)).status, 404, `round ${round}: still deleted`);
  }
});

t.test('RFC 7592 PUTs racing an admin disable: the client stays disabled, with one of the names', async (t) => {
  for (let round = 0; round < 5; round += 1) {
    const client = await register();
    const puts = Array.from({ length: 10 }, (_, i) => put(i % 2 === 0 ? a : b, client, `name ${i}`));
    const disabled = admin(round % 2 === 0 ? b : a, 'PATCH', client.clientId, { enabled: false });
    const statuses = await Promise.all(puts);
    t.equal((await disabled).status, 200, `round ${round}: disabled`);
    t.same(
      statuses.filter((status) => status !== 200),
      [],
      `round ${round}: each PUT 200`,
    );
    const shown = await admin(a, 'GET', client.clientId);
    t.equal(shown.client?.enabled, false, `round ${round}: still disabled`);
    t.match(shown.client?.clientName, /^name \d$/, `round ${round}: a PUT's name`);
  }
});
