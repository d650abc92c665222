// The client registry's cap on store lookups (gateway/client_registry/client_registry.ts,
// docs/operations.md "Limits"): with Redis frozen (SIGSTOP: connections stay open, nothing
// answers), 320 distinct uncached store-kept clients ask at once. 256 lookups wait on the store and
// end at its command bound as 503 + Retry-After, none hangs; the 64 past the cap are answered 503
// + Retry-After at once; one warning says so, without any client id or secret, and the store
// outage log has the failed lookups. Once Redis
// runs again, the gauge is back to 0 and the same clients get tokens.
import t from 'tap';
import { burst, readGauge } from '../../helpers/burst.js';
import { jsonLogSink } from '../../helpers/json_log_sink.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { formPost } from '../../helpers/release_at_once.js';
import { seedStoredClients, storedClientIds, storedSecret } from '../../helpers/stored_clients.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

t.setTimeout(90_000);
const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (!redis.managed) {
  t.comment('skipped: Redis not managed by this test (it must be frozen)');
  process.exit(0);
}
const commandTimeoutMs = 3000;
const cap = 256;
const keyPrefix = `lookup-cap-${process.pid}:`;
const ids = storedClientIds(320);
await seedStoredClients(redis.url, keyPrefix, ids);

const { logger, logs, rawLog } = jsonLogSink();
const gateway = await startTestGateway(t, {
  logger,
  patch: (raw) => {
    raw.store = { type: 'redis', url: redis.url, keyPrefix, commandTimeoutMs };
    raw.workers = { threads: 2 };
    raw.clientRegistry = { store: true };
  },
});
const metrics = `${gateway.managementUrl}/metrics`;
const clientCredentials = (clientId: string) =>
  formPost('/connect/token', { grant_type: 'client_credentials', scope: 'api1' }, { clientId, secret: storedSecret });

t.test('Redis frozen: 256 lookups end at the store bound, the rest are refused at once, then all recover', async (t) => {
  // Warm: the worker threads' first token loads their signing code.
  t.same(
    (await burst(gateway.port, [formPost('/connect/token', { grant_type: 'client_credentials' }, { clientId: 'm2m', secret: 'secret' })]))
      .statuses,
    {
      200: 1,
    },
  );
  redis.pause();
  t.teardown(() => redis.resume());
  const frozen = burst(gateway.port, ids.map(clientCredentials), commandTimeoutMs + 10_000);
  // While the store is frozen the cap is full.
  let highest = 0;
  const watch = setInterval(() => {
    void readGauge(metrics, 'tessera_client_registry_lookups_in_flight').then((v) => (highest = Math.max(highest, v)));
  }, 100);
  const outcome = await frozen;
  clearInterval(watch);
  redis.resume();
  t.equal(
    outcome.unanswered,
    0,
    `every connection answered (${JSON.stringify(outcome.statuses)} in ${Math.round(outcome.lastAnswerMs)} ms)`,
  );
  t.equal(outcome.answeredTwice, 0, 'none twice');
  t.same(outcome.statuses, { 503: ids.length }, 'every one 503: the store cannot answer');
  t.equal(outcome.unavailableWithoutRetryAfter, 0, 'each with Retry-After');
  t.ok(
    outcome.answers.every((a) => a !== undefined && (JSON.parse(a.body) as { error: string }).error === 'temporarily_unavailable'),
    'temporarily_unavailable',
  );
  t.equal(highest, cap, `the lookups gauge showed the cap while Redis was frozen (${highest})`);
  // No lookup can time out before commandTimeoutMs from the burst's start: what came earlier was refused at the cap.
  const early = outcome.answers.filter((a) => a !== undefined && a.ms < commandTimeoutMs).length;
  t.ok(early >= ids.length - cap, `${early} answered before the store's bound: the ${ids.length - cap} past the cap did not wait`);
  // No hang: the waiting lookups end at the store's command bound (plus its slack and a loaded machine).
  t.ok(outcome.lastAnswerMs < commandTimeoutMs + 5000, `the last answer after ${Math.round(outcome.lastAnswerMs)} ms`);

  const capLines = logs.filter((l) => l.msg.startsWith('client registry: store lookups at their cap'));
  t.equal(capLines.length, 1, 'one warning at the cap, not one per refused request');
  t.equal(capLines[0]?.maxLookupsInFlight, cap, 'it names the cap');
  t.ok(
    logs.some((l) => l.msg.startsWith('store unavailable: requests that need it are answered 503')),
    'the lookups the frozen store failed are a store outage in the log',
  );
  t.notOk(
    rawLog.some((line) => line.includes(storedSecret)),
    'no log line holds a client secret',
  );

  // Recovery: the lookups drain to 0 (already, since each ended at the bound), and the clients get tokens.
  t.equal(await readGauge(metrics, 'tessera_client_registry_lookups_in_flight'), 0, 'no lookup left in flight');
  const end = logs.find((l) => l.msg === 'client registry: store lookups below their cap again');
  t.ok(
    end !== undefined && Number(end.refusedLookups) >= ids.length - cap,
    `then one line with the count (${String(end?.refusedLookups)})`,
  );
  // The store's connection may need a moment after SIGCONT: retry the first request briefly.
  const deadline = Date.now() + 10_000;
  let first = 0;
  while (Date.now() < deadline && first !== 200) {
    first = (await burst(gateway.port, [clientCredentials(ids[0] as string)])).statuses[200] === 1 ? 200 : 0;
    if (first !== 200) await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(first, 200, 'a stored client gets a token once Redis runs again');
  const after = await burst(gateway.port, ids.slice(1, 201).map(clientCredentials));
  t.same(after.statuses, { 200: 200 }, '200 more uncached stored clients at once: all served');
  t.equal(await readGauge(metrics, 'tessera_client_registry_lookups_in_flight'), 0, 'and the gauge back to 0');
});
