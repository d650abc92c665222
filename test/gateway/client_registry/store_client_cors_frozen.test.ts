/**
 * CORS origin lookups with Redis frozen (SIGSTOP: connections stay open, nothing answers;
 * docs/endpoints.md "CORS", docs/operations.md "Limits"): 600 token requests and preflights from
 * 300 origins store-kept clients list, none looked up yet. 256 lookups wait on the store (the cap)
 * and end at its command bound; the requests of the origins past the cap are answered at once.
 * Every one is answered exactly once, as from an origin not allowed: the token request `200`
 * without CORS headers, the preflight `403`, both with `Vary: Origin`. One warning says so, naming
 * no origin and holding no secret. After SIGCONT the same origins are allowed (a lookup that
 * failed was not remembered), one line ends the episode, and every gauge is back to 0.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { burst, readGauge } from '../../helpers/burst.js';
import { corsPreflight, corsProblem, corsTokenRequest, createCorsClients } from '../../helpers/cors_clients.js';
import { jsonLogSink, type LogLine } from '../../helpers/json_log_sink.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

t.setTimeout(90_000);
const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (!redis.managed) {
  t.comment('skipped: Redis not managed by this test (it must be frozen)');
  process.exit(0);
}
const commandTimeoutMs = 1500;
const cap = 256;
const adminToken = 'admin-token-for-the-cors-frozen-test-0123';
const tokenFile = path.join(t.testdir(), 'admin.token');
writeFileSync(tokenFile, `${adminToken}\n`);

const { logger, logs, rawLog } = jsonLogSink();
const gateway = await startTestGateway(t, {
  logger,
  patch: (raw) => {
    raw.store = { type: 'redis', url: redis.url, keyPrefix: `cors-frozen-${process.pid}:`, commandTimeoutMs };
    raw.workers = { threads: 2 };
    raw.clientRegistry = { store: true };
    raw.admin = { tokenFile };
  },
});
const metrics = `${gateway.managementUrl}/metrics`;
const allowed = await createCorsClients(gateway.managementUrl as string, adminToken, 6, 50);
const outageLines = (): LogLine[] => logs.filter((l) => l.msg.startsWith('CORS: store-kept origins not looked up'));

t.test(
  'Redis frozen: every CORS request answered once, within the bound, without CORS headers; then the origins are allowed again',
  async (t) => {
    // Warm: the worker threads' first token loads their signing code.
    t.same((await burst(gateway.port, [corsTokenRequest('https://warm.example')])).statuses, { 200: 1 }, 'warm');
    redis.pause();
    t.teardown(() => redis.resume());
    const plan = [...allowed, ...allowed].map((origin, i) => ({ origin, preflight: i % 3 === 0 }));
    const frozen = burst(
      gateway.port,
      plan.map((p) => (p.preflight ? corsPreflight(p.origin) : corsTokenRequest(p.origin))),
      commandTimeoutMs + 10_000,
    );
    let highest = 0;
    const watch = setInterval(() => {
      void readGauge(metrics, 'tessera_client_registry_origin_lookups_in_flight').then((v) => (highest = Math.max(highest, v)));
    }, 100);
    const outcome = await frozen;
    clearInterval(watch);

    t.equal(
      outcome.unanswered,
      0,
      `every connection answered (${JSON.stringify(outcome.statuses)} in ${Math.round(outcome.lastAnswerMs)} ms)`,
    );
    t.equal(outcome.answeredTwice, 0, 'none twice');
    const problems = plan.flatMap((p, i) => corsProblem(outcome.answers[i], p.origin, p.preflight, false) ?? []);
    t.same(problems.slice(0, 5), [], `each answered as from an origin not allowed (${problems.length} not)`);
    t.equal(highest, cap, `the origin lookups gauge showed the cap while Redis was frozen (${highest})`);
    // No lookup ends before the store's bound: what was answered earlier never waited on the store.
    const pastCap = 2 * (allowed.length - cap);
    const early = outcome.answers.filter((a) => a !== undefined && a.ms < commandTimeoutMs).length;
    t.ok(early >= pastCap, `${early} answered before the store's bound: the ${pastCap} requests of origins past the cap did not wait`);
    t.ok(outcome.lastAnswerMs < commandTimeoutMs + 5000, `the last answer after ${Math.round(outcome.lastAnswerMs)} ms`);
    t.equal(await readGauge(metrics, 'tessera_client_registry_origin_lookups_in_flight'), 0, 'no origin lookup left');
    t.equal(await readGauge(metrics, 'tessera_http_requests_in_flight'), 0, 'no request left in flight');

    t.equal(outageLines().length, 1, 'one warning, not one per request');
    t.equal(outageLines()[0]?.level, 40, 'at warn');
    t.equal(outageLines()[0]?.maxLookupsInFlight, cap, 'it names the cap');
    t.notOk(
      rawLog.some((line) => line.includes('CORS:') && line.includes('.example')),
      'it names no origin',
    );
    t.notOk(
      rawLog.some((line) => line.includes(adminToken)),
      'no log line holds the admin token',
    );

    redis.resume();
    // The store's connection may need a moment after SIGCONT: retry the first preflight briefly.
    const deadline = Date.now() + 10_000;
    let first: string | undefined = 'not sent';
    while (Date.now() < deadline && first !== undefined) {
      const origin = allowed[0] as string;
      first = corsProblem((await burst(gateway.port, [corsPreflight(origin)])).answers[0], origin, true, true);
      if (first !== undefined) await new Promise((r) => setTimeout(r, 100));
    }
    t.equal(first, undefined, 'an origin refused while Redis was frozen is allowed once it runs again');
    const again = allowed.slice(1, 201);
    const after = await burst(
      gateway.port,
      again.map((origin) => corsTokenRequest(origin)),
    );
    const afterProblems = again.flatMap((origin, i) => corsProblem(after.answers[i], origin, false, true) ?? []);
    t.same(afterProblems.slice(0, 5), [], `200 more of them at once: each allowed (${afterProblems.length} not)`);
    const end = logs.find((l) => l.msg === 'CORS: origin lookups are answered again');
    t.ok(
      end !== undefined && Number(end.unansweredLookups) >= cap + pastCap,
      `then one line with the count (${String(end?.unansweredLookups)})`,
    );
    t.equal(outageLines().length, 1, 'and no second warning');
    t.equal(await readGauge(metrics, 'tessera_client_registry_origin_lookups_in_flight'), 0, 'the lookups gauge back to 0');
    t.equal(await readGauge(metrics, 'tessera_http_requests_in_flight'), 0, 'and the requests in flight');
  },
);
