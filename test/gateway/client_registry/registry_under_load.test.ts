// Changes to store-kept clients while keep-alive load runs through the client registry
// (docs/architecture.md, "Clients in the store"; docs/operations.md, "Admin API"): gateway B serves
// 24 connections of client_credentials and PAR requests over 120 store-kept clients, more than its
// cache holds, so store lookups are always running there; gateway A's admin API disables one
// client under load and changes others meanwhile. B refuses the disabled client within a second
// of the change, and no request of any other client is refused: a change that empties B's cache
// while a lookup runs must not turn that lookup's valid client into "unknown".
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { callbackUri } from '../../helpers/authorize_flow.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { startKeepAliveLoad } from '../../helpers/keep_alive_load.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { seedStoredClients, storedClientIds, storedSecret } from '../../helpers/stored_clients.js';
import { startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';

t.setTimeout(90_000);
const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);
const keyPrefix = `registry-load-${process.pid}:`;
const ids = storedClientIds(120);
const victim = 'victim';
const bystanders = storedClientIds(10, 'bystander');
await seedStoredClients(redis.url, keyPrefix, [...ids, victim, ...bystanders]);
const adminToken = 'admin-token-for-the-registry-load-test-0123';
const tokenFile = path.join(t.testdir(), 'admin.token');
writeFileSync(tokenFile, `${adminToken}\n`);

const start = (cacheSize: number, threads: number): Promise<TestGateway> =>
  startTestGateway(t, {
    patch: (raw) => {
      raw.store = { type: 'redis', url: redis.url, keyPrefix, commandTimeoutMs: 5000 };
      raw.workers = { threads };
      raw.clientRegistry = { store: true, cacheSize, pollIntervalMs: 250 };
      raw.admin = { tokenFile };
    },
  });
// A only changes clients (its admin API); B serves the load, its cache smaller than the clients asked for.
const [a, b] = await Promise.all([start(10_000, 1), start(40, 2)]);

function admin(method: string, pathname: string, body: unknown): Promise<Response> {
  return fetch(`${a.managementUrl}${pathname}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

function request(port: number, pathname: string, clientId: string, body: string): string {
  return (
    `POST ${pathname} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
    `Authorization: ${basicAuthorization(clientId, storedSecret)}\r\n` +
    `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`
  );
}
const ccBody = 'grant_type=client_credentials&scope=api1';
const parBody = new URLSearchParams({
  response_type: 'code',
  redirect_uri: callbackUri,
  scope: 'openid',
  code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGjSstw-cM',
  code_challenge_method: 'S256',
}).toString();

async function waitFor(what: string, condition: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

t.test('a client disabled through the admin API under load is refused within a second; no other client is refused', async (t) => {
  const connections = 24;
  const sentBy = new Array<number>(connections).fill(0);
  const victimAnswers: { status: number; at: number }[] = [];
  const others = new Map<number, number>();
  const otherBodies: string[] = [];
  const load = startKeepAliveLoad({
    port: b.port,
    connections,
    request: (connection) => {
      const n = (sentBy[connection] as number) + 0;
      sentBy[connection] = n + 1;
      // Two connections for the client to be disabled; the others cycle over the stored clients.
      if (connection < 2) return request(b.port, '/connect/token', victim, ccBody);
      const id = ids[(connection * 17 + n) % ids.length] as string;
      return connection % 2 === 0 ? request(b.port, '/connect/par', id, parBody) : request(b.port, '/connect/token', id, ccBody);
    },
    onAnswer: (status, written) => {
      if (written.includes(basicAuthorization(victim, storedSecret))) victimAnswers.push({ status, at: performance.now() });
      else {
        others.set(status, (others.get(status) ?? 0) + 1);
        if (status !== 200 && status !== 201 && otherBodies.length < 5) otherBodies.push(written.split('\r\n')[0] as string);
      }
    },
  });
  await waitFor('the load to run', () => load.answered >= 300, 30_000);
  // Changes to other clients, each one emptying B's cache at its next poll while lookups run there.
  for (const [k, bystander] of bystanders.slice(0, 5).entries()) {
    const res = await admin('PATCH', `/admin/clients/${bystander}`, { accessTokenLifetime: 600 + k });
    t.equal(res.status, 200, `change ${k + 1} to another client`);
    const before = load.answered;
    await waitFor('answers after the change', () => load.answered >= before + 100, 30_000);
  }
  const disabledRes = await admin('PATCH', `/admin/clients/${victim}`, { enabled: false });
  const disabledAt = performance.now();
  t.equal(disabledRes.status, 200, 'disabled through the admin API on gateway A');
  for (const [k, bystander] of bystanders.slice(5).entries()) {
    await new Promise((r) => setTimeout(r, 150));
    t.equal((await admin('PATCH', `/admin/clients/${bystander}`, { accessTokenLifetime: 700 + k })).status, 200);
  }
  const last = load.answered;
  await waitFor('answers after the last change', () => load.answered >= last + 300 && performance.now() > disabledAt + 1500, 30_000);
  await load.stop();

  t.equal(load.lost, 0, 'no request lost');
  t.equal(load.answered, load.sent, 'every request sent was answered');
  const refusedAt = victimAnswers.find((answer) => answer.at > disabledAt && answer.status !== 200)?.at;
  t.ok(refusedAt !== undefined, 'the disabled client is refused on gateway B');
  const seenMs = (refusedAt ?? Number.POSITIVE_INFINITY) - disabledAt;
  t.ok(seenMs <= 1000, `refused ${Math.round(seenMs)} ms after the change`);
  const lateTokens = victimAnswers.filter((answer) => refusedAt !== undefined && answer.at > refusedAt && answer.status === 200).length;
  t.equal(lateTokens, 0, 'and never served again');
  t.same(
    [
      ...victimAnswers.filter((answer) => answer.at > disabledAt + 1000).reduce((s, answer) => s.add(answer.status), new Set<number>()),
    ].filter((status) => status !== 401 && status !== 429),
    [],
    'refused as invalid_client (401), then by the failure throttle (429)',
  );
  t.same(
    [...others.keys()].filter((status) => status !== 200 && status !== 201),
    [],
    `every other client served: ${JSON.stringify(Object.fromEntries(others))} ${otherBodies.join(' | ')}`,
  );
  t.comment(
    `answered ${load.answered}: ${JSON.stringify(Object.fromEntries(load.statuses))}; refused ${Math.round(seenMs)} ms after the change`,
  );
});
