/**
 * Store-kept API resources (docs/configuration.md, `clientRegistry`; docs/operations.md, "Admin
 * API"), over real HTTP with two gateways on one Redis: a resource created through gateway A's
 * admin API, with a scope the config file does not have, is seen at gateway B within a second:
 * a store-kept client allowed that scope gets tokens at B whose `aud` names the resource (the
 * worker threads see it), the resource indicator `resource` accepts it, and the resource
 * introspects at B with its secret, seeing only its own scopes. A changed scope list and a
 * deleted resource are seen at B within a second; listing pages; every change is an audit event.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { AuditEvent } from '../../../gateway/observability/events/audit_event.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);

const adminToken = 'admin-token-for-the-resources-test-0123456789';
const tokenFile = path.join(t.testdir(), 'admin.token');
writeFileSync(tokenFile, `${adminToken}\n`);
const keyPrefix = `tessera-resources-${process.pid}:`;
const events: AuditEvent[] = [];

const start = (onEvent?: (event: AuditEvent) => void): Promise<TestGateway> =>
  startTestGateway(t, {
    patch: (raw) => {
      raw.store = { type: 'redis', url: redis.url, keyPrefix };
      raw.clientRegistry = { store: true, pollIntervalMs: 250 };
      raw.admin = { tokenFile };
      // Two threads: each must see the resources, not only the one that happens to run a request.
      raw.workers = { threads: 2 };
    },
    ...(onEvent === undefined ? {} : { onEvent }),
  });

const [a, b] = await Promise.all([start((event) => events.push(event)), start()]);

function admin(gateway: TestGateway, method: string, pathname: string, body?: unknown): Promise<Response> {
  return fetch(`${gateway.managementUrl}${pathname}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

interface TokenAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

async function token(gateway: TestGateway, clientId: string, secret: string, form: Record<string, string>): Promise<TokenAnswer> {
  const res = await fetch(gateway.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization(clientId, secret) },
    body: new URLSearchParams({ grant_type: 'client_credentials', ...form }).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function introspect(gateway: TestGateway, name: string, secret: string, accessToken: string): Promise<TokenAnswer> {
  const res = await fetch(`${gateway.url}/connect/introspect`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization(name, secret) },
    body: new URLSearchParams({ token: accessToken }).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const audienceOf = (jwt: unknown): unknown => JSON.parse(Buffer.from(String(jwt).split('.')[1] as string, 'base64url').toString()).aud;

/** Milliseconds until `check` holds, polling every 100 ms; Infinity past `limitMs`. */
async function within(limitMs: number, check: () => Promise<boolean>): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > limitMs) return Number.POSITIVE_INFINITY;
    await new Promise((r) => setTimeout(r, 100));
  }
  return performance.now() - started;
}

let resourceSecret = '';
let clientSecret = '';

t.test('a resource and its new scope, created on A, reach B and its worker threads within a second', async (t) => {
  // B's threads warm, and B has read the (empty) set of store-kept resources.
  t.equal((await token(b, 'm2m', 'secret', { scope: 'api1' })).status, 200);
  const created = await admin(a, 'POST', '/admin/api-resources', { name: 'urn:orders', scopes: ['orders.read', 'api1'] });
  t.equal(created.status, 201);
  const answer = (await created.json()) as { secret: string; apiResource: Record<string, unknown> };
  resourceSecret = answer.secret;
  t.same(answer.apiResource.scopes, ['orders.read', 'api1']);
  t.equal(answer.apiResource.source, 'store');
  t.notOk(JSON.stringify(answer.apiResource).includes(resourceSecret), 'the view holds no secret');

  // A store-kept client may now be allowed the resource's scope (the same checks as the config file's).
  const client = await admin(a, 'POST', '/admin/clients', {
    clientId: 'svc-orders',
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['orders.read', 'api1'],
  });
  t.equal(client.status, 201);
  clientSecret = ((await client.json()) as { secret: string }).secret;

  const first = await token(a, 'svc-orders', clientSecret, { scope: 'orders.read' });
  t.equal(first.status, 200, 'at once at A');
  t.equal(audienceOf(first.body.access_token), 'urn:orders');
  const ms = await within(1000, async () => (await token(b, 'svc-orders', clientSecret, { scope: 'orders.read' })).status === 200);
  t.ok(ms <= 1000, `tokens for the new scope at B after ${ms.toFixed(0)} ms`);
  // Both of B's threads: several requests at once spread over them.
  const many = await Promise.all(Array.from({ length: 8 }, () => token(b, 'svc-orders', clientSecret, { scope: 'orders.read' })));
  t.same(
    many.map((m) => [m.status, audienceOf(m.body.access_token)]),
    Array.from({ length: 8 }, () => [200, 'urn:orders']),
  );
  const discovery = (await (await fetch(`${b.url}/.well-known/openid-configuration`)).json()) as { scopes_supported: string[] };
  t.ok(discovery.scopes_supported.includes('orders.read'), 'discovery at B lists the new scope');
  t.equal(discovery.scopes_supported.filter((s) => s === 'api1').length, 1, 'a scope listed once');
  const both = await token(b, 'svc-orders', clientSecret, { scope: 'api1' });
  t.same(audienceOf(both.body.access_token), ['urn:api1', 'urn:orders'], 'a scope of a config file resource and a store-kept one');
});

t.test('resource indicators and introspection see the store-kept resource at B', async (t) => {
  const narrowed = await token(b, 'svc-orders', clientSecret, { scope: 'orders.read api1', resource: 'urn:orders' });
  t.equal(narrowed.status, 200);
  t.equal(audienceOf(narrowed.body.access_token), 'urn:orders');
  const unknown = await token(b, 'svc-orders', clientSecret, { resource: 'urn:nothing' });
  t.equal(unknown.body.error, 'invalid_target');

  const issued = await token(b, 'svc-orders', clientSecret, { scope: 'orders.read api1' });
  const seen = await introspect(b, 'urn:orders', resourceSecret, issued.body.access_token as string);
  t.equal(seen.status, 200);
  t.equal(seen.body.active, true);
  t.equal(seen.body.scope, 'orders.read api1', "the resource's own scopes");
  t.equal((await introspect(b, 'urn:orders', 'wrong', issued.body.access_token as string)).status, 401);
});

t.test('a changed scope list and a deleted resource are seen at B within a second', async (t) => {
  const changed = await admin(a, 'PATCH', '/admin/api-resources/urn:orders', { scopes: ['orders.write'] });
  t.equal(changed.status, 200);
  const ms = await within(
    1000,
    async () => (await token(b, 'svc-orders', clientSecret, { scope: 'orders.read' })).body.error === 'invalid_scope',
  );
  t.ok(ms <= 1000, `a scope no resource lists refused at B after ${ms.toFixed(0)} ms`);
  const issued = await token(b, 'm2m', 'secret', { scope: 'api1' });
  t.equal((await introspect(b, 'urn:orders', resourceSecret, issued.body.access_token as string)).status, 200, 'still a resource');
  t.equal((await admin(a, 'DELETE', '/admin/api-resources/urn:orders')).status, 204);
  const gone = await within(
    1000,
    async () => (await introspect(b, 'urn:orders', resourceSecret, issued.body.access_token as string)).status === 401,
  );
  t.ok(gone <= 1000, `a deleted resource refused at introspection at B after ${gone.toFixed(0)} ms`);
});

t.test('the admin API lists by pages, refuses what the config file would, and audits every change', async (t) => {
  for (const name of ['urn:r1', 'urn:r2', 'urn:r3'])
    t.equal((await admin(a, 'POST', '/admin/api-resources', { name, scopes: ['api2'] })).status, 201);
  const first = (await (await admin(a, 'GET', '/admin/api-resources?limit=2')).json()) as {
    apiResources: { name: string }[];
    next: string;
  };
  t.same(
    first.apiResources.map((r) => r.name),
    ['urn:r1', 'urn:r2'],
  );
  const second = (await (await admin(a, 'GET', `/admin/api-resources?limit=2&after=${first.next}`)).json()) as {
    apiResources: { name: string }[];
    next: string | null;
  };
  t.same(
    second.apiResources.map((r) => r.name),
    ['urn:r3'],
  );
  t.equal(second.next, null);
  t.equal((await admin(a, 'POST', '/admin/api-resources', { name: 'urn:api1' })).status, 409, "a config file resource's name");
  t.equal((await admin(a, 'POST', '/admin/api-resources', { name: 'urn:r1' })).status, 409, 'taken');
  t.equal((await admin(a, 'POST', '/admin/api-resources', { name: 'urn:x', scopes: ['openid'] })).status, 400, 'an identity scope');
  t.equal((await admin(a, 'POST', '/admin/api-resources', { name: 'urn:x', extra: 1 })).status, 400, 'the config schema: strict');
  const config = (await (await admin(a, 'GET', '/admin/api-resources/urn:api1')).json()) as { apiResource: { source: string } };
  t.equal(config.apiResource.source, 'config');
  const added = await admin(a, 'POST', '/admin/api-resources/urn:r1/secrets');
  t.equal(added.status, 201);
  const names = events.filter((e) => e.category === 'Configuration' && e.details?.apiResource !== undefined).map((e) => e.name);
  t.same(names.slice(0, 3), ['ApiResourceCreated', 'ApiResourceUpdated', 'ApiResourceDeleted']);
  t.equal(names.at(-1), 'ApiResourceSecretAdded');
  t.notOk(JSON.stringify(events).includes(resourceSecret), 'no event holds a secret');
});
