// No request waits for another's store call (docs/operations.md, "Lanes"): with Redis frozen, a
// client_credentials request (which needs no store) answers as it does with Redis healthy, while
// requests that need the store wait for their command timeout. One worker thread, so that on the
// old single queue every request would have shared batches.
import t from 'tap';
import { newFamilyHandle, newFamilyId } from '../../core/records/refresh_token_handle.js';
import { callbackUri, codeFlowClient } from '../helpers/authorize_flow.js';
import { basicAuthorization } from '../helpers/basic_authorization.js';
import { sendRedisCommand, startRedisServer } from '../helpers/redis_server.js';
import { startTestGateway, type TestGateway } from '../helpers/test_gateway.js';

const commandTimeoutMs = 2000;

async function timed(gw: TestGateway, clientId: string, body: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { authorization: basicAuthorization(clientId), 'content-type': 'application/x-www-form-urlencoded' },
    body,
  });
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - started };
}

t.test('with Redis frozen, client_credentials does not wait for store-bound requests', async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      raw.store = { type: 'redis', url: redis.url, commandTimeoutMs };
      raw.workers = { threads: 1 };
      (raw.clients as unknown[]).push(codeFlowClient('web'));
    },
  });
  // Redeeming a well-formed code needs the store; the code is unknown, but the store must say so.
  const codeRequest = () =>
    new URLSearchParams({
      grant_type: 'authorization_code',
      code: newFamilyHandle('code', newFamilyId()).handle,
      redirect_uri: callbackUri,
      code_verifier: 'v'.repeat(43),
    }).toString();
  const cc = 'grant_type=client_credentials&scope=api1';
  t.equal((await timed(gw, 'm2m', cc)).status, 200, 'warm');

  t.match(await sendRedisCommand(redis.port, `CLIENT PAUSE ${commandTimeoutMs * 3} ALL`), /^\+OK/);
  t.teardown(() => sendRedisCommand(redis.port, 'CLIENT UNPAUSE'));
  const storeBound = Array.from({ length: 20 }, () => timed(gw, 'web', codeRequest()));
  // Interleaved with the store-bound requests, in the same event-loop turns.
  const fast = await Promise.all(Array.from({ length: 20 }, () => timed(gw, 'm2m', cc)));
  const slow = await Promise.all(storeBound);

  t.ok(
    fast.every((r) => r.status === 200),
    'every client_credentials request got its token',
  );
  t.comment(JSON.stringify(fast.map((r) => Math.round(r.ms))), JSON.stringify(slow.map((r) => Math.round(r.ms))));
  const slowest = Math.max(...fast.map((r) => r.ms));
  const quickestStore = Math.min(...slow.map((r) => r.ms));
  t.ok(quickestStore >= commandTimeoutMs * 0.75, `the store-bound requests waited for the store (${Math.round(quickestStore)} ms)`);
  t.ok(
    slowest < commandTimeoutMs / 2,
    `the slowest client_credentials answer (${Math.round(slowest)} ms) came long before any store timeout`,
  );
  t.ok(
    slow.every((r) => r.status === 503),
    'the store-bound requests answer 503 when the store does not',
  );
});
