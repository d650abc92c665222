/**
 * The client registry across two gateways on one Redis (docs/architecture.md, "Clients in the
 * store"): a client created through gateway A's admin API gets tokens at gateway B within a
 * second; disabled, or its secret expired, it is refused at B within a second; unknown ids that
 * come again do not reach the store again (the negative cache); last, a store outage while a page
 * looks a client up is a 503 page.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import t from 'tap';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { monitorRedis, startRedisServer } from '../../helpers/redis_server.js';
import { startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);

const adminToken = 'admin-token-for-the-registry-test-0123456789';
const tokenFile = path.join(t.testdir(), 'admin.token');
writeFileSync(tokenFile, `${adminToken}\n`);
const keyPrefix = `tessera-registry-${process.pid}:`;

const start = (pollIntervalMs = 250): Promise<TestGateway> =>
  startTestGateway(t, {
    patch: (raw) => {
      raw.store = { type: 'redis', url: redis.url, keyPrefix };
      raw.clientRegistry = { store: true, pollIntervalMs };
      raw.admin = { tokenFile };
    },
  });

const [a, b] = await Promise.all([start(), start()]);

function admin(gateway: TestGateway, method: string, pathname: string, body?: unknown): Promise<Response> {
  return fetch(`${gateway.managementUrl}${pathname}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function clientCredentials(gateway: TestGateway, clientId: string, secret: string): Promise<number> {
  const res = await fetch(gateway.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization(clientId, secret) },
    body: 'grant_type=client_credentials&scope=api1',
  });
  await res.arrayBuffer();
  return res.status;
}

/**
 * Milliseconds until `check` holds, polling every 100 ms; fails the test past `limitMs`. Not
 * faster: each refused attempt counts toward the client authentication throttle (10 failures per
 * client id), and a 20 ms poll reached it before B's 250 ms version poll on a quiet machine.
 */
async function within(limitMs: number, check: () => Promise<boolean>): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > limitMs) return Number.POSITIVE_INFINITY;
    await new Promise((r) => setTimeout(r, 100));
  }
  return performance.now() - started;
}

t.test('a client created on gateway A gets tokens at gateway B within a second', async (t) => {
  // Both gateways' worker threads warm (a thread's first token loads its signing code), so the
  // second measured is the change's way to B, not a cold start (once 1.1 s on a loaded machine).
  t.equal(await clientCredentials(a, 'm2m', 'secret'), 200);
  t.equal(await clientCredentials(b, 'm2m', 'secret'), 200);
  // B looks the id up first: unknown, and remembered as unknown.
  t.equal(await clientCredentials(b, 'svc-1', 'x'), 401);
  const created = await admin(a, 'POST', '/admin/clients', {
    clientId: 'svc-1',
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['api1'],
  });
  t.equal(created.status, 201);
  const { secret } = (await created.json()) as { secret: string };
  t.equal(await clientCredentials(a, 'svc-1', secret), 200, 'at once on the gateway that made the change');
  const ms = await within(1000, async () => (await clientCredentials(b, 'svc-1', secret)) === 200);
  t.ok(ms <= 1000, `tokens at B after ${ms.toFixed(0)} ms`);
  t.equal(await clientCredentials(b, 'svc-1', 'wrong'), 401, 'a wrong secret is still refused');
});

t.test('a disabled client is refused at gateway B within a second', async (t) => {
  const created = await admin(a, 'POST', '/admin/clients', {
    clientId: 'svc-2',
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['api1'],
  });
  const { secret } = (await created.json()) as { secret: string };
  t.equal(await clientCredentials(b, 'svc-2', secret), 200, 'B has it cached');
  const disabled = await admin(a, 'PATCH', '/admin/clients/svc-2', { enabled: false });
  t.equal(disabled.status, 200);
  const ms = await within(1000, async () => (await clientCredentials(b, 'svc-2', secret)) === 401);
  t.ok(ms <= 1000, `refused at B after ${ms.toFixed(0)} ms`);
});

t.test('an expired secret is refused at gateway B within a second, the new one works', async (t) => {
  const created = await admin(a, 'POST', '/admin/clients', {
    clientId: 'svc-3',
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['api1'],
  });
  const { secret: old, client } = (await created.json()) as { secret: string; client: { clientSecrets: { id: string }[] } };
  t.equal(await clientCredentials(b, 'svc-3', old), 200);
  const added = await admin(a, 'POST', '/admin/clients/svc-3/secrets', {});
  t.equal(added.status, 201);
  const { secret: next } = (await added.json()) as { secret: string };
  const oldId = client.clientSecrets[0]?.id as string;
  t.equal((await admin(a, 'POST', `/admin/clients/svc-3/secrets/${oldId}/expire`)).status, 200);
  const ms = await within(1000, async () => (await clientCredentials(b, 'svc-3', old)) === 401);
  t.ok(ms <= 1000, `old secret refused at B after ${ms.toFixed(0)} ms`);
  t.equal(await clientCredentials(b, 'svc-3', next), 200, 'the new secret works');
});

t.test('unknown client ids asked again do not reach the store again', async (t) => {
  // MONITOR tells the lookups' GETs from the version polls' (both version keys end in "version"),
  // which a count of all GETs mixed in at a rate a loaded machine made unpredictable.
  const gets: string[] = [];
  let ended = false;
  const watching = await monitorRedis(redis.port, (args) => {
    if (args[0]?.toLowerCase() === 'get' && args[1]?.startsWith(keyPrefix) === true && !args[1].endsWith('version')) gets.push(args[1]);
    if (args[0]?.toLowerCase() === 'echo' && args[1] === 'registry-test-end') ended = true;
  });
  t.teardown(() => watching.stop());
  // The changes of the tests before reach this gateway within a second: let them land first.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const ids = ['nobody-1', 'nobody-2', 'nobody-3', 'nobody-4', 'nobody-5'];
  const statuses = new Set<number>();
  for (let round = 0; round < 20; round++) {
    for (const status of await Promise.all(ids.map((id) => clientCredentials(b, id, 'guess')))) statuses.add(status);
  }
  // Refused as unknown, then by the failure throttle (per client id and address).
  t.same(
    [...statuses].filter((s) => s !== 401 && s !== 429),
    [],
  );
  const marker = new Redis(redis.url);
  t.teardown(() => marker.disconnect());
  await marker.echo('registry-test-end');
  for (const until = Date.now() + 10_000; !ended && Date.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 20));
  watching.stop();
  // Each id once; twice at most when a version change from the tests before (seen within a second,
  // later on a loaded machine) empties the caches during the rounds. Without the negative cache:
  // 20 each.
  const perId = [...new Set(gets)].map((key) => gets.filter((g) => g === key).length);
  t.equal(perId.length, 5, 'each id was looked up');
  t.ok(
    perId.every((n) => n <= 2),
    `client record GETs per id for 20 requests each: ${perId.join(', ')}`,
  );
});

// Last: it stops the store.
t.test('a store outage while a page looks a client up is a 503 page, not "unknown application"', async (t) => {
  if (!redis.managed) {
    t.comment('skipped: Redis not managed by this test');
    return;
  }
  await redis.stop();
  const query = new URLSearchParams({ client_id: 'never-looked-up', redirect_uri: 'https://app.example/cb', response_type: 'code' });
  const res = await fetch(`${b.url}/connect/authorize?${query}`);
  t.equal(res.status, 503);
  t.notMatch(await res.text(), 'The application is unknown.');
});
