/**
 * SIGTERM while CORS requests wait on origin lookups (docs/operations.md, "Signals and shutdown";
 * docs/endpoints.md, "CORS"): `tessera start` on Redis, which is frozen (SIGSTOP) so that 400 token
 * requests and preflights from 100 origins store-kept clients list, not looked up yet, all wait on
 * their lookup; then SIGTERM. The stop waits for them: each is answered exactly once when its
 * lookup ends at the store's bound, as from an origin not allowed and closing its connection
 * (the gateway drains), and the process exits 0 with nothing left unanswered.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { burst, readGauge } from '../../helpers/burst.js';
import { corsPreflight, corsProblem, corsTokenRequest, createCorsClients } from '../../helpers/cors_clients.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { startSpawnedGateway } from '../../helpers/spawned_gateway.js';

t.setTimeout(120_000);
const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (!redis.managed) {
  t.comment('skipped: Redis not managed by this test (it must be frozen)');
  process.exit(0);
}
const commandTimeoutMs = 2000;
const drainSeconds = 1;
// The file's own folder: the spawned gateway's (the subtest's) is made anew when it starts.
const adminToken = 'admin-token-for-the-cors-signal-test-0123';
const tokenFile = path.join(t.testdir(), 'admin.token');
writeFileSync(tokenFile, `${adminToken}\n`);

t.test('SIGTERM while 400 CORS requests wait on origin lookups: each answered once, closing; exit 0', async (t) => {
  const gateway = await startSpawnedGateway(t, {
    validators: [],
    patch: (raw) => {
      raw.store = { type: 'redis', url: redis.url, keyPrefix: `cors-signals-${process.pid}:`, commandTimeoutMs };
      raw.clientRegistry = { store: true };
      raw.admin = { tokenFile };
      raw.shutdown = { drainSeconds, requestTimeoutSeconds: 10 };
    },
  });
  const port = Number(new URL(gateway.url).port);
  const metrics = `${gateway.managementUrl}/metrics`;
  const allowed = await createCorsClients(gateway.managementUrl, adminToken, 2, 50);
  // Warm: the worker thread's first token loads its signing code.
  t.same((await burst(port, [corsTokenRequest('https://warm.example')])).statuses, { 200: 1 }, 'warm');

  redis.pause();
  t.teardown(() => redis.resume());
  const plan = [...allowed, ...allowed, ...allowed, ...allowed].map((origin, i) => ({ origin, preflight: i % 2 === 0 }));
  const waiting = burst(
    port,
    plan.map((p) => (p.preflight ? corsPreflight(p.origin) : corsTokenRequest(p.origin))),
    commandTimeoutMs + 15_000,
  );
  const until = Date.now() + commandTimeoutMs;
  let lookups = 0;
  while (Date.now() < until && lookups < allowed.length) {
    lookups = await readGauge(metrics, 'tessera_client_registry_origin_lookups_in_flight');
  }
  t.equal(lookups, allowed.length, 'every origin being looked up when the signal comes');
  const signalled = performance.now();
  const exited = gateway.terminate();
  const outcome = await waiting;
  const code = await exited;
  const stopMs = performance.now() - signalled;
  redis.resume();

  t.equal(
    outcome.unanswered,
    0,
    `every connection answered (${JSON.stringify(outcome.statuses)} in ${Math.round(outcome.lastAnswerMs)} ms)`,
  );
  t.equal(outcome.answeredTwice, 0, 'none twice');
  const problems = plan.flatMap((p, i) => corsProblem(outcome.answers[i], p.origin, p.preflight, false) ?? []);
  t.same(problems.slice(0, 5), [], `each answered as from an origin not allowed: the store did not answer (${problems.length} not)`);
  const kept = outcome.answers.filter((a) => a?.headers.get('connection') !== 'close').length;
  t.equal(kept, 0, 'each answer closes its connection: the gateway drains');
  t.equal(code, 0, 'exit 0');
  // The drain, then the lookups' bound, then the close (the pool, the store's quit raced with its bound).
  t.ok(stopMs < drainSeconds * 1000 + 2 * commandTimeoutMs + 5000, `exited ${Math.round(stopMs)} ms after the signal`);
  t.notOk(
    gateway.logLines().some((l) => l.msg.startsWith('stopping with requests unanswered')),
    'no request left unanswered at the stop',
  );
  t.equal(
    gateway.logLines().filter((l) => l.msg.startsWith('CORS: store-kept origins not looked up')).length,
    1,
    'one warning of the lookups the store did not answer',
  );
});
