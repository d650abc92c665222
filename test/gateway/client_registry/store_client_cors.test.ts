/**
 * CORS for store-kept clients (docs/endpoints.md, "CORS"), over real HTTP with two gateways on one
 * Redis: an origin a client created through gateway A's admin API lists is allowed at gateway B
 * (preflight, a simple token request the first time B sees the origin, discovery), within a second
 * of the change even where B had it cached as not allowed; an origin the client no longer lists,
 * or a disabled client's, is refused at B within a second. The config file lists no origin, so
 * before this change B read no `Origin` at all.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { startRedisServer } from '../../helpers/redis_server.js';
import { startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);

const adminToken = 'admin-token-for-the-cors-test-0123456789';
const tokenFile = path.join(t.testdir(), 'admin.token');
writeFileSync(tokenFile, `${adminToken}\n`);
const keyPrefix = `tessera-cors-${process.pid}:`;

const start = (): Promise<TestGateway> =>
  startTestGateway(t, {
    patch: (raw) => {
      raw.store = { type: 'redis', url: redis.url, keyPrefix };
      raw.clientRegistry = { store: true, pollIntervalMs: 250 };
      raw.admin = { tokenFile };
    },
  });

const [a, b] = await Promise.all([start(), start()]);
t.same(
  a.config.clients.flatMap((c) => c.allowedCorsOrigins),
  [],
  'no config file client lists an origin',
);

function admin(gateway: TestGateway, method: string, pathname: string, body?: unknown): Promise<Response> {
  return fetch(`${gateway.managementUrl}${pathname}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** The preflight's status and its `Access-Control-Allow-Origin`. */
async function preflight(gateway: TestGateway, origin: string): Promise<[number, string | null]> {
  const res = await fetch(gateway.tokenUrl, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'dpop' },
  });
  await res.arrayBuffer();
  return [res.status, res.headers.get('access-control-allow-origin')];
}

/** A simple (not preflighted) public client token request from `origin`: status and `Access-Control-Allow-Origin`. */
async function tokenRequest(gateway: TestGateway, origin: string, clientId: string): Promise<[number, string | null, string | null]> {
  const res = await fetch(gateway.tokenUrl, {
    method: 'POST',
    headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId }).toString(),
  });
  await res.arrayBuffer();
  return [res.status, res.headers.get('access-control-allow-origin'), res.headers.get('vary')];
}

/** Milliseconds until `check` holds, polling every 50 ms; Infinity past `limitMs`. */
async function within(limitMs: number, check: () => Promise<boolean>): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > limitMs) return Number.POSITIVE_INFINITY;
    await new Promise((r) => setTimeout(r, 50));
  }
  return performance.now() - started;
}

const spa = {
  clientId: 'spa-1',
  requireClientSecret: false,
  allowedGrantTypes: ['client_credentials'],
  allowedScopes: ['api1'],
  allowedCorsOrigins: ['https://spa.example', 'https://other.example'],
};

t.test("a store-kept client's origin is allowed at the other gateway within a second", async (t) => {
  t.same(await preflight(b, 'https://spa.example'), [403, null], 'not yet: B remembers the origin as not allowed');
  t.equal((await admin(a, 'POST', '/admin/clients', spa)).status, 201);
  t.same(await preflight(a, 'https://spa.example'), [204, 'https://spa.example'], 'at once at A');
  const ms = await within(1000, async () => (await preflight(b, 'https://spa.example'))[0] === 204);
  t.ok(ms <= 1000, `preflight allowed at B after ${ms.toFixed(0)} ms`);
  t.same(await preflight(b, 'https://spa.example'), [204, 'https://spa.example']);
});

t.test('the first simple request from an origin B has not seen carries the CORS headers', async (t) => {
  const [status, allow, vary] = await tokenRequest(b, 'https://other.example', 'spa-1');
  t.equal(status, 200);
  t.equal(allow, 'https://other.example', 'the answer waited for the lookup');
  t.equal(vary, 'Origin');
  const [, again] = await tokenRequest(b, 'https://other.example', 'spa-1');
  t.equal(again, 'https://other.example', 'from the cache');
  const [, stranger, strangerVary] = await tokenRequest(b, 'https://evil.example', 'spa-1');
  t.equal(stranger, null, 'an origin no client lists');
  t.equal(strangerVary, 'Origin');
  const discovery = await fetch(`${b.url}/.well-known/openid-configuration`, { headers: { origin: 'https://spa.example' } });
  await discovery.arrayBuffer();
  t.equal(discovery.headers.get('access-control-allow-origin'), 'https://spa.example', 'discovery too');
});

t.test('an origin dropped, or a disabled client, is refused at the other gateway within a second', async (t) => {
  t.equal((await admin(a, 'PATCH', '/admin/clients/spa-1', { allowedCorsOrigins: ['https://other.example'] })).status, 200);
  const ms = await within(1000, async () => (await preflight(b, 'https://spa.example'))[0] === 403);
  t.ok(ms <= 1000, `dropped origin refused at B after ${ms.toFixed(0)} ms`);
  t.same(await preflight(b, 'https://other.example'), [204, 'https://other.example'], 'the kept origin stays');
  t.equal((await admin(a, 'PATCH', '/admin/clients/spa-1', { enabled: false })).status, 200);
  const disabled = await within(1000, async () => (await preflight(b, 'https://other.example'))[0] === 403);
  t.ok(disabled <= 1000, `a disabled client's origin refused at B after ${disabled.toFixed(0)} ms`);
  t.equal((await admin(a, 'DELETE', '/admin/clients/spa-1')).status, 204);
  t.same(await preflight(a, 'https://other.example'), [403, null], 'a deleted client allows nothing');
});
