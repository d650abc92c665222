// Bursts of 2,000 concurrent connections to each dispatcher lane (docs/operations.md, "Lanes" and
// "Limits"): every connection gets 200, or 503 with Retry-After where a bound refuses it, exactly
// once and within a bound; the in-flight gauge is back to 0 afterwards; and a following burst of
// 200 is served in full, so a burst leaves no capacity behind. The dispatcher's property test
// (test/gateway/dispatch/dispatcher_exactly_once.test.ts) checks the same promise over random faults.
import t, { type Test } from 'tap';
import { burst, readGauge, type BurstOutcome } from '../helpers/burst.js';
import { formPost } from '../helpers/release_at_once.js';
import { startRedisServer } from '../helpers/redis_server.js';
import { offlineUserClient } from '../helpers/password_users.js';
import { startTestGateway, type TestGateway } from '../helpers/test_gateway.js';

const deviceGrant = 'urn:ietf:params:oauth:grant-type:device_code';
// argon2id at the least cost a config accepts (bench/support/bench_config.ts): a sign-in costs
// the lane its work, not 14 ms of hash, so 2,000 of them fit in a test.
const user = {
  subjectId: 'sub-burst',
  username: 'burst',
  password: 'bench-password',
  passwordHash: '$argon2id$v=19$m=1024,t=1,p=1$uxf8scwBKCvqmdwwrkdDhA$PSaNehvYS+91BWCxvU9lgcf6bKB0JrXxNVB3+Qn13dw',
};
const basic = { clientId: 'ro', secret: 'secret' };
const withinMs = 30_000;

function patchFor(store: Record<string, unknown>) {
  return (raw: Record<string, unknown>) => {
    raw.store = store;
    raw.workers = { threads: 2 };
    raw.users = [{ subjectId: user.subjectId, username: user.username, passwordHash: user.passwordHash }];
    raw.throttling = { deviceAuthorization: { maxRequests: 100_000, windowSeconds: 60 } };
    (raw.clients as unknown[]).push(offlineUserClient('ro'), {
      clientId: 'tv',
      requireClientSecret: false,
      allowedGrantTypes: [deviceGrant],
      allowedScopes: ['api1'],
    });
  };
}

// Four bursts of 2,000 and the 2,200 sign-ins that mint the refresh tokens: longer than most files.
t.setTimeout(240_000);

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);
const [memoryGateway, redisGateway] = await Promise.all([
  startTestGateway(t, { patch: patchFor({ type: 'memory' }) }),
  // What is tested is the dispatcher, not Redis's latency on a loaded machine: a generous command timeout.
  startTestGateway(t, { patch: patchFor({ type: 'redis', url: redis.url, commandTimeoutMs: 5000 }) }),
]);

const clientCredentials = () =>
  formPost('/connect/token', { grant_type: 'client_credentials', scope: 'api1' }, { clientId: 'm2m', secret: 'secret' });
const password = () =>
  formPost(
    '/connect/token',
    { grant_type: 'password', username: user.username, password: user.password, scope: 'api1 offline_access' },
    basic,
  );
const deviceAuthorization = () => formPost('/connect/deviceauthorization', { client_id: 'tv', scope: 'api1' });
const refresh = (token: string) => formPost('/connect/token', { grant_type: 'refresh_token', refresh_token: token }, basic);

/** Every connection answered once, with 200 or 503 + Retry-After, within the bound. */
function assertServedOrRefused(t: Test, outcome: BurstOutcome, label: string): void {
  const { 200: ok = 0, 503: refused = 0, ...others } = outcome.statuses;
  t.equal(
    outcome.unanswered,
    0,
    `${label}: every connection answered (${ok} × 200, ${refused} × 503 in ${Math.round(outcome.lastAnswerMs)} ms)`,
  );
  t.same(others, {}, `${label}: no answer but 200 or 503`);
  t.equal(outcome.unavailableWithoutRetryAfter, 0, `${label}: every 503 carries Retry-After`);
  t.equal(outcome.answeredTwice, 0, `${label}: no connection answered twice`);
  t.ok(outcome.lastAnswerMs < withinMs, `${label}: the last answer within ${withinMs / 1000} s`);
}

async function assertDrained(t: Test, gateway: TestGateway, label: string): Promise<void> {
  const metrics = `${gateway.managementUrl}/metrics`;
  t.equal(await readGauge(metrics, 'tessera_worker_requests_in_flight'), 0, `${label}: nothing left in flight`);
  t.equal(await readGauge(metrics, 'tessera_worker_queue_depth'), 0, `${label}: nothing left waiting`);
}

async function assertServedInFull(t: Test, gateway: TestGateway, requests: Buffer[], label: string): Promise<BurstOutcome> {
  const outcome = await burst(gateway.port, requests, withinMs);
  t.same(outcome.statuses, { 200: requests.length }, `${label}: a burst of ${requests.length} after it is served in full`);
  return outcome;
}

t.test('client_credentials (fast lane): 2,000 at once', async (t) => {
  const outcome = await burst(memoryGateway.port, Array.from({ length: 2000 }, clientCredentials), withinMs);
  assertServedOrRefused(t, outcome, 'client_credentials');
  await assertDrained(t, memoryGateway, 'client_credentials');
  await assertServedInFull(t, memoryGateway, Array.from({ length: 200 }, clientCredentials), 'client_credentials');
});

t.test('device authorization by a public client (store lane): 2,000 at once', async (t) => {
  const outcome = await burst(memoryGateway.port, Array.from({ length: 2000 }, deviceAuthorization), withinMs);
  assertServedOrRefused(t, outcome, 'device authorization');
  await assertDrained(t, memoryGateway, 'device authorization');
  await assertServedInFull(t, memoryGateway, Array.from({ length: 200 }, deviceAuthorization), 'device authorization');
});

t.test('password (password lane): 2,000 at once', async (t) => {
  const outcome = await burst(memoryGateway.port, Array.from({ length: 2000 }, password), withinMs);
  assertServedOrRefused(t, outcome, 'password');
  t.ok((outcome.statuses[503] ?? 0) > 0, 'the bounded lane refuses what it cannot hold');
  await assertDrained(t, memoryGateway, 'password');
  await assertServedInFull(t, memoryGateway, Array.from({ length: 200 }, password), 'password');
});

t.test('refresh_token on Redis (store lane): 2,000 at once, each its own family', async (t) => {
  // 2,200 refresh tokens, from sign-ins of 200 at a time (the password lane holds 256 waiting).
  const tokens: string[] = [];
  for (let round = 0; tokens.length < 2200 && round < 30; round++) {
    const minted = await burst(redisGateway.port, Array.from({ length: 200 }, password), withinMs);
    for (const body of minted.bodies) if (body !== undefined) tokens.push((JSON.parse(body) as { refresh_token: string }).refresh_token);
  }
  t.ok(tokens.length >= 2200, `${tokens.length} refresh tokens to spend`);
  const outcome = await burst(redisGateway.port, tokens.slice(0, 2000).map(refresh), withinMs);
  assertServedOrRefused(t, outcome, 'refresh');
  await assertDrained(t, redisGateway, 'refresh');
  await assertServedInFull(t, redisGateway, tokens.slice(2000).map(refresh), 'refresh');
});
