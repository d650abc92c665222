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
