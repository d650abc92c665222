// Bursts of 2,000 concurrent connections to the authorization endpoint's pages by store-kept
// clients (docs/architecture.md, "Clients in the store"; docs/endpoints.md, "Remembered
// consent"), on a real Redis: one signed-in browser whose consent to a stored client is
// remembered asks 1,500 times at once (each a consent read and a code written), beside 500
// stored clients never looked up (each a registry lookup, past its cap a 503 page). Every
// connection is answered exactly once: 302 with a code never given twice, the consent page, or
// 503 + Retry-After; then nothing is left in flight or looking up.
import t from 'tap';
import { AuthorizeFlow, callbackUri, pkcePair } from '../helpers/authorize_flow.js';
import { burst, readGauge } from '../helpers/burst.js';
import { addPasswordFixtures, passwordFixtures } from '../helpers/password_users.js';
import { startRedisServer } from '../helpers/redis_server.js';
import { seedStoredClients, storedClientIds } from '../helpers/stored_clients.js';
import { startTestGateway } from '../helpers/test_gateway.js';

t.setTimeout(120_000);
const withinMs = 30_000;
const fixtures = await passwordFixtures();
const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);
const keyPrefix = `pages-burst-${process.pid}:`;
const ids = storedClientIds(501);
await seedStoredClients(redis.url, keyPrefix, ids);
const gateway = await startTestGateway(t, {
  patch: (raw) => {
    addPasswordFixtures(raw, fixtures);
    raw.store = { type: 'redis', url: redis.url, keyPrefix, commandTimeoutMs: 5000 };
    raw.workers = { threads: 2 };
    raw.clientRegistry = { store: true };
  },
});

const { challenge } = pkcePair();
const params = (clientId: string) => ({
  client_id: clientId,
  redirect_uri: callbackUri,
  response_type: 'code',
  scope: 'openid api1',
  state: 'st',
  code_challenge: challenge,
  code_challenge_method: 'S256',
});

t.test('remembered consent of a stored client 1,500 times at once, beside 500 stored clients never looked up', async (t) => {
  const consented = ids[0] as string;
  const flow = new AuthorizeFlow(gateway);
  const login = await flow.authorize(params(consented));
  const consent = await flow.login(login, 'alice', 'alice-pw');
  t.equal(consent.status, 200, 'the consent page');
  const decided = await flow.decide(consent, 'allow', { remember: 'on' });
  t.equal(decided.status, 302, 'allowed, remembered');
  const cookie = flow.browser.cookieHeader();
  const get = (clientId: string) =>
    Buffer.from(`GET /connect/authorize?${new URLSearchParams(params(clientId))} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${cookie}\r\n\r\n`);
  const requests = [...Array.from({ length: 1500 }, () => get(consented)), ...ids.slice(1).map(get)];
  const outcome = await burst(gateway.port, requests, withinMs);
  t.equal(
    outcome.unanswered,
    0,
    `every connection answered (${JSON.stringify(outcome.statuses)} in ${Math.round(outcome.lastAnswerMs)} ms)`,
  );
  t.equal(outcome.answeredTwice, 0, 'none twice');
  t.equal(outcome.unavailableWithoutRetryAfter, 0, 'every 503 carries Retry-After');
  const codes = new Set<string>();
  const wrong: string[] = [];
  for (const [i, answer] of outcome.answers.entries()) {
    if (answer === undefined || answer.status === 503) continue;
    if (i < 1500) {
      const code = answer.status === 302 && answer.location !== undefined ? new URL(answer.location).searchParams.get('code') : null;
      if (code === null) wrong.push(`#${i}: ${answer.status} ${answer.location ?? answer.body.slice(0, 120)}`);
      else codes.add(code);
    } else if (answer.status !== 200 || !answer.body.includes('value="allow"'))
      wrong.push(`#${i}: ${answer.status} ${answer.body.slice(0, 120)}`);
  }
  t.same(wrong.slice(0, 5), [], `remembered consent: a code; the others: the consent page (${wrong.length} not)`);
  const redirected = outcome.answers.slice(0, 1500).filter((answer) => answer?.status === 302).length;
  t.equal(codes.size, redirected, `${redirected} codes, none given twice`);
  t.ok(redirected > 0, 'codes were issued');
  t.comment(`pages: ${JSON.stringify(outcome.statuses)} in ${Math.round(outcome.lastAnswerMs)} ms`);
  const metrics = `${gateway.managementUrl}/metrics`;
  t.equal(await readGauge(metrics, 'tessera_worker_requests_in_flight'), 0, 'nothing left in flight');
  t.equal(await readGauge(metrics, 'tessera_client_registry_lookups_in_flight'), 0, 'no store lookup left in flight');
});
