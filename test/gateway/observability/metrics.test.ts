// What an on-call reads (docs/operations.md, "Metrics", "Logs"): /metrics on the management
// listener (or on the public port behind a bearer token), the request, store, pool and key
// metrics, one access line per token request and per pushed authorization request, and a store outage logged once with its count.
// Real gateways, a private redis-server stopped for the outage.
import { Writable } from 'node:stream';
import t from 'tap';
import { pino } from 'pino';
import { callbackUri, codeFlowClient, pkcePair } from '../../helpers/authorize_flow.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { addPasswordFixtures, passwordFixtures } from '../../helpers/password_users.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { startTestGateway, writeSigningKey, type TestGateway } from '../../helpers/test_gateway.js';

const fixtures = await passwordFixtures();
const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);

type LogLine = Record<string, unknown> & { msg: string; level: number };
const logs: LogLine[] = [];
const sink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    for (const line of chunk.toString().split('\n')) if (line.length > 0) logs.push(JSON.parse(line) as LogLine);
    done();
  },
});
const { signing } = await writeSigningKey(t);
const gw = await startTestGateway(t, {
  logger: pino({ level: 'info' }, sink),
  patch: (raw) => {
    addPasswordFixtures(raw, fixtures);
    raw.store = { type: 'redis', url: redis.url, keyPrefix: `metrics-test:${process.pid}:`, commandTimeoutMs: 1000 };
    raw.signing = signing;
    (raw.clients as unknown[]).push(codeFlowClient('web'));
  },
});

async function token(body: string, clientId = 'm2m', secret = 'secret') {
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization(clientId, secret) },
    body,
  });
  return { status: res.status, text: await res.text() };
}

async function scrape(gateway: TestGateway): Promise<string> {
  return (await fetch(`${gateway.managementUrl}/metrics`)).text();
}

function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

t.test('one info line per token request, with its outcome and never the token', async (t) => {
  const issued = await token('grant_type=client_credentials&scope=api1');
  t.equal(issued.status, 200);
  t.equal((await token('grant_type=client_credentials', 'm2m', 'wrong-secret-123')).status, 401);
  const lines = logs.filter((l) => l.msg === 'token request');
  t.match(lines.at(-2), {
    level: 30,
    endpoint: '/connect/token',
    grantType: 'client_credentials',
    clientId: 'm2m',
    status: 200,
    address: '127.0.0.1',
  });
  t.type(lines.at(-2)?.durationMs, 'number');
  t.match(lines.at(-1), { clientId: 'm2m', status: 401, error: 'invalid_client' });
  t.ok(
    logs.some((l) => l.msg === 'client authentication failed' && l.clientId === 'm2m'),
    'the failed authentication has its own line',
  );
  const text = JSON.stringify(logs);
  const accessToken = (JSON.parse(issued.text) as { access_token: string }).access_token;
  t.notOk(text.includes(accessToken), 'the token is never logged');
  t.notOk(text.includes('wrong-secret-123'), 'the secret is never logged');
});

t.test('a pushed authorization request has its access line and its request series', async (t) => {
  const push = (secret: string) =>
    fetch(`${gw.url}/connect/par`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization('web', secret) },
      body: new URLSearchParams({
        response_type: 'code',
        redirect_uri: callbackUri,
        scope: 'openid',
        code_challenge: pkcePair().challenge,
        code_challenge_method: 'S256',
      }).toString(),
    });
  const pushed = await push('secret');
  t.equal(pushed.status, 201);
  const { request_uri: requestUri } = (await pushed.json()) as { request_uri: string };
  t.equal((await push('wrong-secret-456')).status, 401);
  const lines = logs.filter((l) => l.msg === 'pushed authorization request');
  t.match(lines.at(-2), { level: 30, endpoint: '/connect/par', clientId: 'web', status: 201, address: '127.0.0.1' });
  t.type(lines.at(-2)?.durationMs, 'number');
  t.match(lines.at(-1), { endpoint: '/connect/par', clientId: 'web', status: 401, error: 'invalid_client' });
  t.notOk(JSON.stringify(logs).includes(requestUri.split(':').at(-1) ?? requestUri), 'the request_uri is never logged');
  const text = await scrape(gw);
  t.ok((value(text, 'tessera_http_requests_total{endpoint="pushed_authorization",grant_type="",status="201"}') ?? 0) >= 1);
  t.ok((value(text, 'tessera_http_requests_total{endpoint="pushed_authorization",grant_type="",status="401"}') ?? 0) >= 1);
  t.ok((value(text, 'tessera_http_request_duration_seconds_count{endpoint="pushed_authorization",grant_type=""}') ?? 0) >= 2);
});

t.test('/metrics has the request, latency, pool, key and store series', async (t) => {
  t.equal((await token('grant_type=password&username=alice&password=alice-pw&scope=api1', 'ro')).status, 200);
  const text = await scrape(gw);
  t.ok((value(text, 'tessera_http_requests_total{endpoint="token",grant_type="password",status="200"}') ?? 0) >= 1);
  t.ok((value(text, 'tessera_http_request_duration_seconds_count{endpoint="token",grant_type="password"}') ?? 0) >= 1);
  for (const gauge of [
    'tessera_worker_queue_depth',
    'tessera_worker_pool_queue_size',
    'tessera_worker_pool_utilization',
    'tessera_worker_threads',
  ]) {
    t.type(value(text, gauge), 'number', gauge);
  }
  t.equal(value(text, 'tessera_worker_threads'), 1);
  const keyAge = value(text, 'tessera_signing_key_age_seconds') ?? -1;
  t.ok(keyAge >= 0 && keyAge < 600, `the key file was written ${keyAge} s ago`);
  // The password grant's throttle counts in Redis, from the worker thread.
  t.ok((value(text, 'tessera_store_command_duration_seconds_count{command="increment"}') ?? 0) >= 1, 'worker store commands counted');
  t.ok((value(text, 'tessera_store_command_duration_seconds_bucket{le="+Inf",command="increment"}') ?? 0) >= 1);
});

t.test('a store outage is logged once, with its count when it ends', async (t) => {
  const warningsBefore = logs.filter((l) => l.msg.startsWith('store unavailable')).length;
  await redis.stop();
  const statuses = [];
  for (let i = 0; i < 6; i++) statuses.push((await token('grant_type=password&username=alice&password=alice-pw&scope=api1', 'ro')).status);
  t.same(statuses, [503, 503, 503, 503, 503, 503]);
  t.equal(logs.filter((l) => l.msg.startsWith('store unavailable')).length - warningsBefore, 1, 'one warning for six failed requests');
  const text = await scrape(gw);
  t.ok((value(text, 'tessera_store_command_errors_total{command="increment"}') ?? 0) >= 6, 'the failed commands are counted');
  await redis.start();
  await gw.stop();
  t.match(
    logs.find((l) => l.msg.startsWith('store outage over')),
    { level: 40, failedRequests: 6 },
  );
});

t.test('/metrics on the public port needs the bearer token', async (t) => {
  const token = 'a-long-metrics-token-0123456789';
  const open = await startTestGateway(t, { patch: (raw) => void (raw.management = { onPublicPort: true, token }) });
  t.equal(open.managementUrl, undefined, 'no management listener');
  const without = await fetch(`${open.url}/metrics`);
  t.equal(without.status, 401);
  t.equal(without.headers.get('www-authenticate'), 'Bearer realm="metrics"');
  t.equal((await fetch(`${open.url}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status, 401);
  const withToken = await fetch(`${open.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  t.equal(withToken.status, 200);
  t.match(await withToken.text(), /tessera_worker_requests_in_flight 0/);
});
