/**
 * CORS for store-kept clients at burst scale (docs/endpoints.md "CORS", docs/operations.md
 * "Limits"): 2,000 connections at once on a gateway with Redis, each a simple token request or a
 * preflight from one of 200 origins that 8 store-kept clients list and this gateway has not looked
 * up yet, or from one of 50 origins no client lists. Every connection is answered exactly once; an
 * allowed origin's answer names it in `Access-Control-Allow-Origin` (the first ones waited for the
 * lookup), an unknown one's has none, all say `Vary: Origin`. Afterwards the requests and lookups
 * in flight are 0 and the origins remembered within their bound (`negativeCacheSize`), fewer than
 * the origins asked for.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { burst, readGauge } from '../../helpers/burst.js';
import { corsPreflight, corsProblem, corsTokenRequest, createCorsClients, unknownOrigin } from '../../helpers/cors_clients.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

t.setTimeout(120_000);
const connections = 2000;
const originBound = 100;
const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);
const adminToken = 'admin-token-for-the-cors-burst-test-012345';
const tokenFile = path.join(t.testdir(), 'admin.token');
writeFileSync(tokenFile, `${adminToken}\n`);
const gateway = await startTestGateway(t, {
  patch: (raw) => {
    // What is tested is the request path, not Redis's latency on a loaded machine: a generous command timeout.
    raw.store = { type: 'redis', url: redis.url, keyPrefix: `cors-burst-${process.pid}:`, commandTimeoutMs: 5000 };
    raw.workers = { threads: 2 };
    raw.clientRegistry = { store: true, negativeCacheSize: originBound };
    raw.admin = { tokenFile };
  },
});
const metrics = `${gateway.managementUrl}/metrics`;
// Each creation empties this gateway's origin cache: none of these origins has been looked up.
const allowed = await createCorsClients(gateway.managementUrl as string, adminToken, 8, 25);
const unknown = Array.from({ length: 50 }, (_, i) => unknownOrigin(i));

t.test(
  '2,000 CORS requests at once from 250 origins not looked up yet: each answered once, with the CORS headers its origin calls for',
  async (t) => {
    // Connection i: a token request or a preflight (every other one), from an allowed origin (four in five) or an unknown one.
    const plan = Array.from({ length: connections }, (_, i) => {
      const isAllowed = i % 5 !== 4;
      const origin = isAllowed ? (allowed[(i * 7) % allowed.length] as string) : (unknown[i % unknown.length] as string);
      return { origin, preflight: i % 2 === 1, allowed: isAllowed };
    });
    const outcome = await burst(
      gateway.port,
      plan.map((p) => (p.preflight ? corsPreflight(p.origin) : corsTokenRequest(p.origin))),
    );
    t.equal(
      outcome.unanswered,
      0,
      `every connection answered (${JSON.stringify(outcome.statuses)} in ${Math.round(outcome.lastAnswerMs)} ms)`,
    );
    t.equal(outcome.answeredTwice, 0, 'none twice');
    const problems = plan.flatMap((p, i) => corsProblem(outcome.answers[i], p.origin, p.preflight, p.allowed) ?? []);
    t.same(problems.slice(0, 5), [], `each answer with the CORS headers its origin calls for (${problems.length} not)`);

    t.equal(await readGauge(metrics, 'tessera_http_requests_in_flight'), 0, 'no request left in flight');
    t.equal(await readGauge(metrics, 'tessera_worker_requests_in_flight'), 0, 'none at the workers');
    t.equal(await readGauge(metrics, 'tessera_client_registry_origin_lookups_in_flight'), 0, 'no origin lookup left');
    const cached = await readGauge(metrics, 'tessera_client_registry_cached_origins');
    t.ok(
      cached > 0 && cached <= originBound,
      `origins remembered within the bound: ${cached} of ${allowed.length + unknown.length} asked for`,
    );
  },
);
