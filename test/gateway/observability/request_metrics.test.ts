// The request counter and duration histogram are counted outside prom-client and formatted at
// scrape time (gateway/observability/request_metrics.ts): the page must read as prom-client's own would.
import t from 'tap';
import { Registry } from 'prom-client';
import { RequestMetrics } from '../../../gateway/observability/request_metrics.js';

function lines(text: string, prefix: string): string[] {
  return text.split('\n').filter((line) => line.startsWith(prefix));
}

t.test('counts by status and cumulative duration buckets, per endpoint and grant type', async (t) => {
  const registry = new Registry();
  registry.setDefaultLabels({ process: '2' });
  const metrics = new RequestMetrics(registry);
  metrics.observe('token', 'client_credentials', 200, 0.0004);
  metrics.observe('token', 'client_credentials', 200, 0.003);
  metrics.observe('token', 'client_credentials', 400, 0.003);
  metrics.observe('token', 'client_credentials', 200, 7);
  metrics.observe('introspection', '', 401, 0.0005);
  const text = await registry.metrics();

  t.match(text, '# TYPE tessera_http_requests_total counter');
  t.match(text, '# TYPE tessera_http_request_duration_seconds histogram');
  t.same(lines(text, 'tessera_http_requests_total{').sort(), [
    'tessera_http_requests_total{endpoint="introspection",grant_type="",status="401",process="2"} 1',
    'tessera_http_requests_total{endpoint="token",grant_type="client_credentials",status="200",process="2"} 3',
    'tessera_http_requests_total{endpoint="token",grant_type="client_credentials",status="400",process="2"} 1',
  ]);
  const cc = lines(text, 'tessera_http_request_duration_seconds_bucket{').filter((l) => l.includes('grant_type="client_credentials"'));
  const byBound = new Map(cc.map((l) => [/le="([^"]+)"/.exec(l)?.[1], Number(l.slice(l.lastIndexOf(' ') + 1))]));
  // A bound counts the durations at or under it (`le`), and every bucket counts those below it too.
  t.equal(byBound.get('0.0005'), 1);
  t.equal(byBound.get('0.001'), 1);
  t.equal(byBound.get('0.0025'), 1);
  t.equal(byBound.get('0.005'), 3);
  t.equal(byBound.get('5'), 3);
  t.equal(byBound.get('+Inf'), 4);
  t.equal(byBound.size, 14);
  t.same(lines(text, 'tessera_http_request_duration_seconds_count{endpoint="token"'), [
    'tessera_http_request_duration_seconds_count{endpoint="token",grant_type="client_credentials",process="2"} 4',
  ]);
  const sum = lines(text, 'tessera_http_request_duration_seconds_sum{endpoint="token"')[0] ?? '';
  t.ok(Math.abs(Number(sum.slice(sum.lastIndexOf(' ') + 1)) - 7.0064) < 1e-9, sum);
  t.match(text, 'tessera_http_request_duration_seconds_bucket{le="0.0005",endpoint="introspection",grant_type="",process="2"} 1');
});
