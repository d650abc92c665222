// The admin API (docs/operations.md, "Admin API") under concurrent requests on two gateways sharing
// one Redis: of many creations of one clientId at once, exactly one is 201 and its secret is the one
// that works, every other 409 (a clientId is never taken twice, docs/operations.md); and 400
// creations of distinct clients at once are each answered once, all listed afterwards, and each
// gets tokens on the other gateway.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';

t.setTimeout(90_000);
const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);
const adminToken = 'admin-token-for-the-concurrency-test-0123456';
const tokenFile = path.join(t.testdir(), 'admin.token');
writeFileSync(tokenFile, `${adminToken}\n`);
const keyPrefix = `admin-concurrency-${process.pid}:`;
const start = (): Promise<TestGateway> =>
  startTestGateway(t, {
    patch: (raw) => {
      raw.store = { type: 'redis', url: redis.url, keyPrefix, commandTimeoutMs: 5000 };
      raw.clientRegistry = { store: true };
      raw.admin = { tokenFile };
    },
  });
const [a, b] = await Promise.all([start(), start()]);

async function create(gateway: TestGateway, clientId: string): Promise<{ status: number; secret?: string }> {
  const res = await fetch(`${gateway.managementUrl}/admin/clients`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ clientId, allowedGrantTypes: ['client_credentials'], allowedScopes: ['api1'] }),
  });
  const body = (await res.json()) as { secret?: string };
  return body.secret === undefined ? { status: res.status } : { status: res.status, secret: body.secret };
}

async function token(gateway: TestGateway, clientId: string, secret: string): Promise<number> {
  const res = await fetch(gateway.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization(clientId, secret) },
    body: 'grant_type=client_credentials&scope=api1',
  });
  await res.arrayBuffer();
  return res.status;
}

t.test('one clientId created 20 times at once on two gateways: one 201, nineteen 409, and the secret given works', async (t) => {
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => create(i % 2 === 0 ? a : b, 'contested')));
  const created = answers.filter((answer) => answer.status === 201);
  t.equal(created.length, 1, `one creation: ${JSON.stringify(answers.map((answer) => answer.status))}`);
  t.equal(answers.filter((answer) => answer.status === 409).length, 19, 'every other one 409');
  const secret = created[0]?.secret as string;
  t.equal(await token(a, 'contested', secret), 200, 'the secret of the 201 gets tokens on A');
  t.equal(await token(b, 'contested', secret), 200, 'and on B');
});

t.test('400 distinct clients created at once on two gateways: each answered 201 once, all listed, each gets a token', async (t) => {
  const ids = Array.from({ length: 400 }, (_, i) => `bulk-${String(i).padStart(3, '0')}`);
  const answers = await Promise.all(ids.map((id, i) => create(i % 2 === 0 ? a : b, id)));
  t.same(
    answers.filter((answer) => answer.status !== 201).map((answer) => answer.status),
    [],
    'all 201',
  );
  const listed: string[] = [];
  let after: string | null = '';
  while (after !== null) {
    const query: string = after === '' ? '?limit=1000' : `?limit=1000&after=${encodeURIComponent(after)}`;
    const page = (await (
      await fetch(`${a.managementUrl}/admin/clients${query}`, { headers: { authorization: `Bearer ${adminToken}` } })
    ).json()) as {
      clients: { clientId: string }[];
      next: string | null;
    };
    listed.push(...page.clients.map((client) => client.clientId));
    after = page.next;
  }
  t.same(
    ids.filter((id) => !listed.includes(id)),
    [],
    'every one listed',
  );
  // Each on the gateway that did not create it, 100 at a time (below the registry's lookup cap).
  const statuses: number[] = [];
  for (let from = 0; from < ids.length; from += 100) {
    statuses.push(
      ...(await Promise.all(
        ids.slice(from, from + 100).map((id, k) => token((from + k) % 2 === 0 ? b : a, id, answers[from + k]?.secret as string)),
      )),
    );
  }
  t.same(
    statuses.filter((status) => status !== 200),
    [],
    'each gets a token on the other gateway',
  );
});

/** One admin request on `gateway`: status and JSON body (`undefined` for none). */
async function admin(gateway: TestGateway, method: string, route: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${gateway.managementUrl}${route}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

type ClientView = Record<string, unknown> & { clientSecrets: { id: string }[] };

async function show(gateway: TestGateway, clientId: string): Promise<{ status: number; client?: ClientView }> {
  const { status, body } = await admin(gateway, 'GET', `/admin/clients/${clientId}`);
  return status === 200 ? { status, client: (body as { client: ClientView }).client } : { status };
}

// Each a different member of the client, so that every one of them must be in the record after.
const fieldChanges: readonly Readonly<Record<string, unknown>>[] = [
  { clientName: 'Patched at once' },
  { accessTokenLifetime: 1200 },
  { identityTokenLifetime: 240 },
  { authorizationCodeLifetime: 120 },
  { deviceCodeLifetime: 600 },
  { pollingInterval: 7 },
  { allowedCorsOrigins: ['https://cors-concurrency.example'] },
  { allowRememberConsent: false },
  { properties: { team: 'blue' } },
  { alwaysSendClientClaims: true },
  { claims: [{ type: 'tier', value: 'gold' }] },
  { allowTokenEndpointAudience: true },
  { refreshTokenRotationsPerMinute: 30 },
  // Above the default sliding lifetime: each of these is valid whichever of them came before.
  { absoluteRefreshTokenLifetime: 2_000_000 },
  { slidingRefreshTokenLifetime: 3600 },
  { refreshTokenExpiration: 'sliding' },
  { refreshTokenUsage: 'reUse' },
  { postLogoutRedirectUris: ['https://app.concurrency.example/bye'] },
  { tlsClientCertificateBoundAccessTokens: true },
  { consentLifetime: 3600 },
];

t.test('20 PATCHes of one client at once on two gateways, each setting another field: every change is kept', async (t) => {
  t.equal((await create(a, 'patched')).status, 201);
  const answers = await Promise.all(fieldChanges.map((change, i) => admin(i % 2 === 0 ? a : b, 'PATCH', '/admin/clients/patched', change)));
  t.same(
    answers.map((answer) => answer.status),
    fieldChanges.map(() => 200),
    `all 200: ${JSON.stringify(answers.filter((answer) => answer.status !== 200))}`,
  );
  const { client } = await show(b, 'patched');
  const missing = fieldChanges.filter((change) => {
    const [name, value] = Object.entries(change)[0] as [string, unknown];
    return JSON.stringify(client?.[name]) !== JSON.stringify(value);
  });
  t.same(missing, [], 'no change lost');
});

t.test('20 secrets added to one client at once on two gateways: all 20 kept, each gets tokens', async (t) => {
  const created = await create(a, 'rolled');
  t.equal(created.status, 201);
  const answers = await Promise.all(
    Array.from({ length: 20 }, (_, i) => admin(i % 2 === 0 ? a : b, 'POST', '/admin/clients/rolled/secrets', { description: `s${i}` })),
  );
  t.same(
    answers.map((answer) => answer.status),
    answers.map(() => 201),
    'all 201',
  );
  const added = answers.map((answer) => answer.body as { secret: string; secretId: string });
  const { client } = await show(a, 'rolled');
  const stored = new Set(client?.clientSecrets.map((s) => s.id));
  t.same(
    added.filter((secret) => !stored.has(secret.secretId)).map((secret) => secret.secretId),
    [],
    'every added secret is stored',
  );
  t.equal(stored.size, 21, 'the first secret and the 20 added');
  const statuses = await Promise.all(added.map((secret, i) => token(i % 2 === 0 ? b : a, 'rolled', secret.secret)));
  t.same(
    statuses.filter((status) => status !== 200),
    [],
    'each added secret gets a token',
  );
  t.equal(await token(a, 'rolled', created.secret as string), 200, 'and so does the first');
});

t.test('PATCHes and secret additions racing a DELETE: the client stays deleted, and each answer is 2xx before it or 404', async (t) => {
  for (let round = 0; round < 5; round += 1) {
    const clientId = `deleted-${round}`;
    t.equal((await create(a, clientId)).status, 201);
    const route = `/admin/clients/${clientId}`;
    // The DELETE starts among the changes, on either gateway, so that some of them read the client
    // before it went and write after.
    const changes = Array.from({ length: 10 }, (_, i) =>
      i % 3 === 2
        ? admin(i % 2 === 0 ? a : b, 'POST', `${route}/secrets`, {})
        : admin(i % 2 === 0 ? a : b, 'PATCH', route, { clientName: `name ${i}` }),
    );
    const deleted = admin(round % 2 === 0 ? b : a, 'DELETE', route);
    const more = Array.from({ length: 10 }, (_, i) => admin(i % 2 === 0 ? b : a, 'PATCH', route, { accessTokenLifetime: 600 + i }));
    const answers = await Promise.all([...changes, ...more]);
    t.equal((await deleted).status, 204, `round ${round}: deleted`);
    t.same(
      answers.filter((answer) => ![200, 201, 404].includes(answer.status)).map((answer) => answer.status),
      [],
      `round ${round}: every change 200/201 or 404`,
    );
    t.equal((await show(a, clientId)).status, 404, `round ${round}: still deleted on A`);
    t.equal((await show(b, clientId)).status, 404, `round ${round}: and on B`);
    const listed = (await admin(a, 'GET', `/admin/clients?after=${encodeURIComponent(`deleted-${round}`.slice(0, -1))}&limit=10`)).body as {
      clients: { clientId: string }[];
    };
    t.notOk(
      listed.clients.some((client) => client.clientId === clientId),
      `round ${round}: not listed`,
    );
    t.equal((await admin(b, 'PATCH', route, { clientName: 'late' })).status, 404, `round ${round}: a later PATCH is 404`);
    t.equal((await show(a, clientId)).status, 404, `round ${round}: and does not bring it back`);
  }
});
