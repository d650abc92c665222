// Audit events end to end (docs/operations.md, "Events"): one real gateway with every sink at
// once (a JSON-lines file, a Redis Stream on a private redis-server, the embedding API's hook);
// each event is produced by a real request, its fields checked, and the raw lines searched for
// every token, secret, code and password the requests carried.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { decideDeviceCode } from '../../../helpers/device_approval.js';
import { Redis } from 'ioredis';
import type { AuditEvent } from '../../../../gateway/observability/events/audit_event.js';
import { basicAuthorization } from '../../../helpers/basic_authorization.js';
import { addPasswordFixtures, offlineUserClient, passwordFixtures } from '../../../helpers/password_users.js';
import { startRedisServer } from '../../../helpers/redis_server.js';
import { startTestGateway } from '../../../helpers/test_gateway.js';

const deviceGrant = 'urn:ietf:params:oauth:grant-type:device_code';
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const fixtures = await passwordFixtures();
const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);

const dir = t.testdir();
const eventFile = join(dir, 'events.jsonl');
const streamKey = `events-test-${process.pid}`;
const hooked: AuditEvent[] = [];
const gw = await startTestGateway(t, {
  patch: (raw) => {
    addPasswordFixtures(raw, fixtures);
    (raw.clients as unknown[]).push(offlineUserClient('app', { refreshTokenReuseGraceSeconds: 0 }), {
      clientId: 'tv',
      requireClientSecret: false,
      allowedGrantTypes: [deviceGrant],
      allowedScopes: ['api1'],
    });
    raw.events = { sink: 'file', file: eventFile, redisStream: { url: redis.url, key: streamKey, maxLen: 1000 } };
  },
  onEvent: (event) => {
    hooked.push(event);
  },
});

/** Secrets, tokens, codes and passwords the requests carried: none may be in an event. */
const carried = new Set<string>(['secret', 'alice-pw', 'wrong-pw']);

async function token(params: Record<string, string>, clientId = 'm2m', secret = 'secret') {
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization(clientId, secret) },
    body: new URLSearchParams(params).toString(),
  });
  const body = (await res.json()) as Record<string, string>;
  for (const member of ['access_token', 'refresh_token', 'id_token']) if (body[member] !== undefined) carried.add(body[member] as string);
  return { status: res.status, body };
}

/** The next hook event matching `match`, waiting for the asynchronous delivery. */
async function eventLike(match: (event: AuditEvent) => boolean): Promise<AuditEvent> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const found = hooked.find(match);
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`no such event among ${JSON.stringify(hooked.map((e) => e.name))}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function checkCommon(t: Test, event: AuditEvent): void {
  t.match(event.id, uuid, 'a random UUID');
  t.ok(Math.abs(Date.parse(event.time) - Date.now()) < 60_000, 'the time is now');
  t.match(event.time, /Z$/, 'in UTC');
}

t.test('a token issued: TokenIssuedSuccess with its jti, never the token', async (t) => {
  const answer = await token({ grant_type: 'client_credentials', scope: 'api1' });
  t.equal(answer.status, 200);
  const jti = JSON.parse(Buffer.from((answer.body.access_token as string).split('.')[1] as string, 'base64url').toString()).jti;
  const event = await eventLike((e) => e.name === 'TokenIssuedSuccess' && e.jti === jti);
  checkCommon(t, event);
  t.match(event, {
    name: 'TokenIssuedSuccess',
    category: 'Token',
    outcome: 'success',
    clientId: 'm2m',
    grantType: 'client_credentials',
    remoteAddress: '127.0.0.1',
    endpoint: '/connect/token',
  });
  t.equal(event.subject, undefined, 'a client-only token has no subject');
});

t.test('a wrong client secret: ClientAuthenticationFailure and TokenIssuedFailure', async (t) => {
  carried.add('not-the-secret');
  const answer = await token({ grant_type: 'client_credentials' }, 'm2m', 'not-the-secret');
  t.equal(answer.status, 401);
  const auth = await eventLike((e) => e.name === 'ClientAuthenticationFailure' && e.clientId === 'm2m');
  checkCommon(t, auth);
  t.match(auth, { category: 'Authentication', outcome: 'failure', error: 'invalid_client', remoteAddress: '127.0.0.1' });
  const failed = await eventLike((e) => e.name === 'TokenIssuedFailure' && e.error === 'invalid_client');
  t.match(failed, { clientId: 'm2m', outcome: 'failure' });
});

t.test('the password grant: UserLoginFailure, then UserLoginSuccess with the subject', async (t) => {
  const wrong = await token({ grant_type: 'password', username: 'alice', password: 'wrong-pw', scope: 'api1' }, 'ro');
  t.equal(wrong.status, 400);
  const failure = await eventLike((e) => e.name === 'UserLoginFailure' && e.clientId === 'ro');
  t.match(failure, {
    username: 'alice',
    outcome: 'failure',
    error: 'wrong_credentials',
    grantType: 'password',
    remoteAddress: '127.0.0.1',
  });
  t.match(await eventLike((e) => e.name === 'TokenIssuedFailure' && e.grantType === 'password'), { error: 'invalid_grant' });

  const right = await token({ grant_type: 'password', username: 'alice', password: 'alice-pw', scope: 'api1' }, 'ro');
  t.equal(right.status, 200);
  t.match(await eventLike((e) => e.name === 'UserLoginSuccess' && e.clientId === 'ro'), { subject: 'sub-alice', username: 'alice' });
  const issued = await eventLike((e) => e.name === 'TokenIssuedSuccess' && e.grantType === 'password');
  t.equal(issued.subject, 'sub-alice');
  t.type(issued.jti, 'string');
});

t.test('a refresh token used twice: RefreshTokenReuseDetected, the family revoked', async (t) => {
  const first = await token({ grant_type: 'password', username: 'alice', password: 'alice-pw', scope: 'api1 offline_access' }, 'app');
  const refreshToken = first.body.refresh_token as string;
  t.equal((await token({ grant_type: 'refresh_token', refresh_token: refreshToken }, 'app')).status, 200);
  t.equal((await token({ grant_type: 'refresh_token', refresh_token: refreshToken }, 'app')).status, 400);
  const reuse = await eventLike((e) => e.name === 'RefreshTokenReuseDetected');
  checkCommon(t, reuse);
  t.match(reuse, {
    category: 'Grants',
    outcome: 'failure',
    clientId: 'app',
    subject: 'sub-alice',
    grantType: 'refresh_token',
    error: 'invalid_grant',
    details: { item: 'refresh_token', familyRevoked: true },
  });
  const metrics = await (await fetch(`${gw.managementUrl}/metrics`)).text();
  t.match(metrics, /^tessera_token_reuse_detected_total\{item="refresh_token"\} 1$/m);
});

t.test('a revoked access token: TokenRevoked with its jti', async (t) => {
  const issued = await token({ grant_type: 'client_credentials', scope: 'api1' });
  const jti = JSON.parse(Buffer.from((issued.body.access_token as string).split('.')[1] as string, 'base64url').toString()).jti;
  const res = await fetch(`${gw.url}/connect/revocation`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization('m2m', 'secret') },
    body: new URLSearchParams({ token: issued.body.access_token as string }).toString(),
  });
  t.equal(res.status, 200);
  const revoked = await eventLike((e) => e.name === 'TokenRevoked');
  t.match(revoked, { clientId: 'm2m', jti, outcome: 'success', details: { tokenType: 'access_token' }, endpoint: '/connect/revocation' });
});

t.test('a device approved and one denied on the /device page', async (t) => {
  for (const decision of ['allow', 'deny'] as const) {
    const authorization = (await (
      await fetch(`${gw.url}/connect/deviceauthorization`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ client_id: 'tv', scope: 'api1' }).toString(),
      })
    ).json()) as { device_code: string; user_code: string };
    carried.add(authorization.device_code);
    carried.add(authorization.user_code);
    t.equal(await decideDeviceCode(gw.url, authorization.user_code, decision), 200);
  }
  t.match(await eventLike((e) => e.name === 'UserLoginSuccess' && e.endpoint === 'login_page'), { clientId: 'tv', subject: 'sub-alice' });
  t.match(await eventLike((e) => e.name === 'DeviceAuthorizationSuccess'), { clientId: 'tv', subject: 'sub-alice', outcome: 'success' });
  t.match(await eventLike((e) => e.name === 'DeviceAuthorizationDenied'), { clientId: 'tv', outcome: 'failure', error: 'access_denied' });
});

t.test('the file and the Redis Stream hold the same events as the hook, and no secret', async (t) => {
  // Let the last flush reach the file and Redis.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const raw = readFileSync(eventFile, 'utf8');
  const lines = raw.trimEnd().split('\n');
  const fromFile = lines.map((line) => JSON.parse(line) as AuditEvent);
  t.same(
    fromFile.map((e) => e.id),
    hooked.map((e) => e.id),
    'one line per event, in order',
  );
  t.notOk(
    lines.some((line) => 'level' in JSON.parse(line)),
    'no application log line among them',
  );
  // Every event a request produced carries the client's address, as IdentityServer's do (issue 33);
  // only the gateway's own events (a key rotation, a validator reload) have none.
  const ownEvents = new Set(['KeyRotated', 'ValidatorReloaded']);
  t.same(
    fromFile.filter((e) => !ownEvents.has(e.name) && e.remoteAddress !== '127.0.0.1').map((e) => e.name),
    [],
    `the address on every request-driven event (${[...new Set(fromFile.map((e) => e.name))].join(', ')})`,
  );

  const client = new Redis(redis.url);
  t.teardown(() => client.quit());
  const entries = await client.xrange(streamKey, '-', '+');
  t.equal(entries.length, hooked.length, 'one stream entry per event');
  const [, fields] = entries[0] as [string, string[]];
  t.equal(fields[0], 'name');
  t.equal(fields[2], 'event');
  t.same(JSON.parse(fields[3] as string), hooked[0]);
  const streamText = entries.map(([, f]) => f.join(' ')).join('\n');

  for (const value of carried) {
    t.notOk(raw.includes(value), `the file never holds ${value.slice(0, 12)}…`);
    t.notOk(streamText.includes(value), `the stream never holds ${value.slice(0, 12)}…`);
  }
});

t.test('a sink that cannot take events drops them, counted, and tokens are still issued', async (t) => {
  await redis.stop();
  t.teardown(() => redis.start());
  const started = performance.now();
  const answers = await Promise.all(Array.from({ length: 20 }, () => token({ grant_type: 'client_credentials' })));
  t.ok(
    answers.every((a) => a.status === 200),
    'every token issued',
  );
  t.ok(performance.now() - started < 5000, 'without waiting for the stream');
  await new Promise((resolve) => setTimeout(resolve, 100));
  const metrics = await (await fetch(`${gw.managementUrl}/metrics`)).text();
  const dropped = Number(/^tessera_events_dropped_total\{sink="redis"\} (\d+)$/m.exec(metrics)?.[1] ?? 0);
  t.ok(dropped >= 20, `${dropped} events dropped by the Redis sink`);
  await eventLike((e) => e.name === 'TokenIssuedSuccess' && hooked.indexOf(e) > hooked.length - 5);
});
