// Tracing (gateway/observability/tracing/, docs/operations.md "Tracing"): a server span per OAuth form request
// that continues the caller's W3C traceparent, with the endpoint, grant, client and outcome, a
// child span for the request's time in a worker thread and, under it, its Redis commands; nothing
// when tracing is off; and the standard OTLP/HTTP exporter configured by OTEL_* variables.
import t, { type Test } from 'tap';
import { createServer } from 'node:http';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { addPasswordFixtures, offlineUserClient, passwordFixtures } from '../../helpers/password_users.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { startSpawnedGateway } from '../../helpers/spawned_gateway.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

const fixtures = await passwordFixtures();
const redis = await startRedisServer();
t.teardown(() => redis.stop());

const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
const callerSpanId = '00f067aa0ba902b7';
const form = { 'content-type': 'application/x-www-form-urlencoded' };

async function tracedGateway(t: Test, enabled: boolean) {
  const exporter = new InMemorySpanExporter();
  const gw = await startTestGateway(t, {
    spanProcessor: new SimpleSpanProcessor({ exporter }),
    patch: (raw) => {
      raw.tracing = { enabled };
      raw.store = { type: 'redis', url: redis.url, keyPrefix: `trace${enabled}:` };
      addPasswordFixtures(raw, fixtures);
      (raw.clients as unknown[]).push(offlineUserClient('app'));
    },
  });
  return { gw, exporter };
}

function byName(spans: readonly ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((s) => s.name === name);
}

t.test('a token request is a server span under the caller’s trace, with worker and store children', async (t) => {
  const { gw, exporter } = await tracedGateway(t, true);
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { ...form, authorization: basicAuthorization('app'), traceparent: `00-${traceId}-${callerSpanId}-01` },
    body: 'grant_type=password&username=alice&password=alice-pw&scope=api1%20offline_access',
  });
  const tokens = (await res.json()) as { access_token: string; refresh_token: string };
  t.equal(res.status, 200);

  const spans = exporter.getFinishedSpans();
  const [server] = byName(spans, 'POST /connect/token');
  if (server === undefined) throw new Error(`no server span in ${spans.map((s) => s.name).join(', ')}`);
  t.equal(server.spanContext().traceId, traceId, 'the caller’s trace');
  t.equal(server.parentSpanContext?.spanId, callerSpanId, 'the caller’s span is the parent');
  t.equal(server.kind, 1, 'SpanKind.SERVER');
  t.match(server.attributes, {
    'http.request.method': 'POST',
    'url.path': '/connect/token',
    'http.response.status_code': 200,
    'tessera.grant_type': 'password',
    'tessera.client_id': 'app',
    'tessera.outcome': 'success',
  });
  const [worker] = byName(spans, 'worker');
  t.equal(worker?.parentSpanContext?.spanId, server.spanContext().spanId, 'the worker’s part is a child of the request');
  t.equal(worker?.spanContext().traceId, traceId);
  const store = spans.filter((s) => s.name.startsWith('store '));
  t.ok(store.length >= 2, `the Redis commands are spans: ${store.map((s) => s.name).join(', ')}`);
  for (const command of store) {
    t.equal(command.parentSpanContext?.spanId, worker?.spanContext().spanId, `${command.name} under the worker span`);
    t.equal(command.attributes['db.system.name'], 'redis');
  }
  const seconds = ([s, ns]: [number, number]) => s + ns / 1e9;
  t.ok(
    seconds(worker?.startTime as [number, number]) >= seconds(server.startTime) - 0.005 &&
      seconds(worker?.endTime as [number, number]) <= seconds(server.endTime) + 0.005,
    'the worker span lies within the request’s',
  );
  const exported = JSON.stringify(spans.map((s) => ({ name: s.name, attributes: s.attributes })));
  for (const secret of [tokens.access_token, tokens.refresh_token, 'alice-pw', 'secret']) {
    t.notOk(exported.includes(secret), 'no token, password or secret in any span');
  }
});

t.test('a refused request is a failure with its OAuth error; without traceparent a new trace starts', async (t) => {
  const { gw, exporter } = await tracedGateway(t, true);
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { ...form, authorization: basicAuthorization('app', 'wrong') },
    body: 'grant_type=client_credentials',
  });
  t.equal(res.status, 401);
  const [server] = byName(exporter.getFinishedSpans(), 'POST /connect/token');
  t.match(server?.attributes, { 'tessera.outcome': 'failure', 'tessera.error': 'invalid_client', 'http.response.status_code': 401 });
  t.equal(server?.status.code, 0, 'a 4xx is the client’s error, not the span’s (OpenTelemetry HTTP conventions)');
  t.equal(server?.parentSpanContext, undefined, 'a root span');
  t.not(server?.spanContext().traceId, traceId);
});

t.test('introspection and revocation are traced too', async (t) => {
  const { gw, exporter } = await tracedGateway(t, true);
  for (const path of ['/connect/introspect', '/connect/revocation']) {
    await fetch(`${gw.url}${path}`, { method: 'POST', headers: { ...form, authorization: basicAuthorization('app') }, body: 'token=x' });
  }
  const names = exporter.getFinishedSpans().map((s) => s.name);
  t.ok(names.includes('POST /connect/introspect'));
  t.ok(names.includes('POST /connect/revocation'));
});

t.test('off by default: no span at all', async (t) => {
  const { gw, exporter } = await tracedGateway(t, false);
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { ...form, authorization: basicAuthorization('m2m'), traceparent: `00-${traceId}-${callerSpanId}-01` },
    body: 'grant_type=client_credentials&scope=api1',
  });
  t.equal(res.status, 200);
  t.same(exporter.getFinishedSpans(), []);
});

t.test('OTLP/HTTP to the endpoint OTEL_EXPORTER_OTLP_ENDPOINT names, as OTEL_SERVICE_NAME; flushed on SIGTERM', async (t) => {
  const received: { path: string; body: string }[] = [];
  const collector = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => collector.close(() => resolve())));
  const address = collector.address();
  if (address === null || typeof address === 'string') throw new Error('no port');

  const gw = await startSpawnedGateway(t, {
    validators: [],
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${address.port}`, OTEL_SERVICE_NAME: 'tessera-under-test' },
    patch: (raw) => {
      raw.tracing = { enabled: true };
      raw.shutdown = { drainSeconds: 0 };
    },
  });
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { ...form, authorization: basicAuthorization('m2m'), traceparent: `00-${traceId}-${callerSpanId}-01` },
    body: 'grant_type=client_credentials&scope=api1',
  });
  t.equal(res.status, 200);
  t.equal(await gw.terminate(), 0, 'a clean stop');
  const traces = received.filter((r) => r.path === '/v1/traces');
  t.ok(traces.length >= 1, 'the batch was exported before the process ended');
  const all = traces.map((r) => r.body).join('\n');
  t.match(all, /"tessera-under-test"/, 'with the service name from OTEL_SERVICE_NAME');
  t.match(all, /POST \/connect\/token/);
  t.match(all, new RegExp(traceId, 'i'), 'in the caller’s trace');
});
