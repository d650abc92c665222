// Bursts of 2,000 concurrent connections through the client registry (docs/architecture.md,
// "Clients in the store"; docs/operations.md, "Limits"): client_credentials and pushed
// authorization requests (RFC 9126) by store-kept clients, most not cached yet, so every one is a
// store lookup, beside unknown ids for the negative cache. Every connection is answered exactly
// once with a valid OAuth answer: 200 (201 for PAR), or 503 + Retry-After (a store lookup past the
// registry's cap), or 401 invalid_client for an unknown id, never 401 for a stored client with its
// secret. Afterwards the in-flight and lookup gauges are 0, the caches within their bounds, and a
// burst of 200 uncached clients (fewer than the cap) is served in full. test/e2e/burst.test.ts
// does the same for config file clients.
import t, { type Test } from 'tap';
import { callbackUri } from '../helpers/authorize_flow.js';
import { burst, readGauge, type BurstOutcome } from '../helpers/burst.js';
import { startRedisServer } from '../helpers/redis_server.js';
import { formPost } from '../helpers/release_at_once.js';
import { seedStoredClients, storedClientIds, storedSecret } from '../helpers/stored_clients.js';
import { startTestGateway } from '../helpers/test_gateway.js';

const withinMs = 30_000;
const cacheSize = 1000;
const negativeCacheSize = 50;
t.setTimeout(180_000);

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);
const keyPrefix = `stored-burst-${process.pid}:`;
const ids = storedClientIds(3200);
await seedStoredClients(redis.url, keyPrefix, ids);
const gateway = await startTestGateway(t, {
  patch: (raw) => {
    // What is tested is the request path, not Redis's latency on a loaded machine: a generous command timeout.
    raw.store = { type: 'redis', url: redis.url, keyPrefix, commandTimeoutMs: 5000 };
    raw.workers = { threads: 2 };
    raw.clientRegistry = { store: true, cacheSize, negativeCacheSize };
  },
});
const metrics = `${gateway.managementUrl}/metrics`;

const clientCredentials = (clientId: string, secret = storedSecret) =>
  formPost('/connect/token', { grant_type: 'client_credentials', scope: 'api1' }, { clientId, secret });
const pushed = (clientId: string) =>
  formPost(
    '/connect/par',
    {
      response_type: 'code',
      redirect_uri: callbackUri,
      scope: 'openid',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGjSstw-cM',
      code_challenge_method: 'S256',
    },
    { clientId, secret: storedSecret },
  );

/** Every connection answered once within the bound; each answer one of `allowed` for its request. */
function assertAnswered(t: Test, outcome: BurstOutcome, label: string, allowed: (i: number) => readonly number[]): void {
  t.equal(
    outcome.unanswered,
    0,
    `${label}: every connection answered (${JSON.stringify(outcome.statuses)} in ${Math.round(outcome.lastAnswerMs)} ms)`,
  );
  t.equal(outcome.answeredTwice, 0, `${label}: no connection answered twice`);
  t.equal(outcome.unavailableWithoutRetryAfter, 0, `${label}: every 503 carries Retry-After`);
  t.ok(outcome.lastAnswerMs < withinMs, `${label}: the last answer within ${withinMs / 1000} s`);
  const wrong = outcome.answers.flatMap((answer, i) =>
    answer === undefined || allowed(i).includes(answer.status) ? [] : [`#${i}: ${answer.status} ${answer.body}`],
  );
  t.same(wrong.slice(0, 5), [], `${label}: every answer the one its request may get (${wrong.length} not)`);
  const badErrors = outcome.answers.filter(
    (answer) =>
      answer !== undefined &&
      answer.status !== 200 &&
      answer.status !== 201 &&
      (JSON.parse(answer.body) as { error?: string }).error !== (answer.status === 503 ? 'temporarily_unavailable' : 'invalid_client'),
  );
  t.equal(badErrors.length, 0, `${label}: 401s are invalid_client, 503s temporarily_unavailable`);
}

async function assertDrained(t: Test, label: string): Promise<void> {
  t.equal(await readGauge(metrics, 'tessera_worker_requests_in_flight'), 0, `${label}: nothing left in flight`);
  t.equal(await readGauge(metrics, 'tessera_worker_queue_depth'), 0, `${label}: nothing left waiting`);
  t.equal(await readGauge(metrics, 'tessera_client_registry_lookups_in_flight'), 0, `${label}: no store lookup left in flight`);
  const cached = await readGauge(metrics, 'tessera_client_registry_cached_clients');
  const unknown = await readGauge(metrics, 'tessera_client_registry_cached_unknown_ids');
  t.ok(cached > 0 && cached <= cacheSize, `${label}: ${cached} clients cached, at most ${cacheSize}`);
  t.ok(unknown <= negativeCacheSize, `${label}: ${unknown} unknown ids remembered, at most ${negativeCacheSize}`);
}

t.test('client_credentials by 1,800 uncached store-kept clients and 100 unknown ids: 2,000 at once', async (t) => {
  const known = ids.slice(0, 1800);
  // 100 unknown ids, each twice: concurrent lookups of one id share a store read.
  const unknown = Array.from({ length: 200 }, (_, i) => `nobody-${i % 100}`);
  const requests = [...known.map((id) => clientCredentials(id)), ...unknown.map((id) => clientCredentials(id, 'guess'))];
  const outcome = await burst(gateway.port, requests, withinMs);
  assertAnswered(t, outcome, 'client_credentials', (i) => (i < known.length ? [200, 503] : [401, 503]));
  const ok = outcome.statuses[200] ?? 0;
  t.ok(ok > 0, `${ok} store-kept clients got tokens`);
  t.comment(`client_credentials: ${JSON.stringify(outcome.statuses)} in ${Math.round(outcome.lastAnswerMs)} ms`);
  await assertDrained(t, 'client_credentials');
  // Fewer than the registry's cap, all uncached: all served, so the burst left no lookup slot behind.
  const after = await burst(
    gateway.port,
    ids.slice(3000, 3200).map((id) => clientCredentials(id)),
    withinMs,
  );
  t.same(after.statuses, { 200: 200 }, 'a burst of 200 uncached clients after it is served in full');
});

t.test('pushed authorization requests by store-kept clients, 1,200 never looked up: 2,000 at once', async (t) => {
  const clients = ids.slice(1000, 3000);
  const outcome = await burst(gateway.port, clients.map(pushed), withinMs);
  assertAnswered(t, outcome, 'PAR', () => [201, 503]);
  const created = outcome.statuses[201] ?? 0;
  t.ok(created > 0, `${created} requests pushed`);
  t.comment(`PAR: ${JSON.stringify(outcome.statuses)} in ${Math.round(outcome.lastAnswerMs)} ms`);
  await assertDrained(t, 'PAR');
  const after = await burst(gateway.port, ids.slice(0, 200).map(pushed), withinMs);
  t.same(after.statuses, { 201: 200 }, 'a burst of 200 after it is served in full');
});
