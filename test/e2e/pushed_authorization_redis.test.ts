// Pushed authorization requests on the Redis store (RFC 9126 §4, docs/storage.md "par"): a
// request_uri pushed to one gateway is used at another, and of many uses at once, on both
// gateways, exactly one passes.
import t from 'tap';
import { callbackUri, codeFlowClient, pkcePair } from '../helpers/authorize_flow.js';
import { basicAuthorization } from '../helpers/basic_authorization.js';
import { startRedisServer } from '../helpers/redis_server.js';
import { startTestGateway, type TestGateway } from '../helpers/test_gateway.js';

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);
const patch = (raw: Record<string, unknown>): void => {
  raw.store = { type: 'redis', url: redis.url, keyPrefix: `par-${process.pid}:` };
  (raw.clients as unknown[]).push(codeFlowClient('web'));
};
const [a, b] = await Promise.all([startTestGateway(t, { patch }), startTestGateway(t, { patch })]);

async function push(gw: TestGateway): Promise<string> {
  const res = await fetch(`${gw.url}/connect/par`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization('web') },
    body: new URLSearchParams({
      client_id: 'web',
      redirect_uri: callbackUri,
      response_type: 'code',
      scope: 'openid',
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
    }).toString(),
  });
  t.equal(res.status, 201);
  return ((await res.json()) as { request_uri: string }).request_uri;
}

const use = async (gw: TestGateway, uri: string): Promise<number> =>
  (await fetch(`${gw.url}/connect/authorize?${new URLSearchParams({ client_id: 'web', request_uri: uri })}`, { redirect: 'manual' }))
    .status;

t.test('a request_uri pushed to one gateway is used once at another', async (t) => {
  const uri = await push(a);
  t.equal(await use(b, uri), 200);
  t.equal(await use(a, uri), 400);
});

t.test('of 20 uses at once on two gateways, one passes', async (t) => {
  const uri = await push(a);
  const statuses = await Promise.all(Array.from({ length: 20 }, (_, i) => use(i % 2 === 0 ? a : b, uri)));
  t.same(
    statuses.filter((s) => s === 200),
    [200],
  );
  t.equal(statuses.filter((s) => s === 400).length, 19);
});
