// Refresh tokens end to end (docs/endpoints.md, docs/storage.md; RFC 6749 §6, RFC 9700 §4.14.2): openid-client against
// real gateways on the memory store and on a private redis-server, including two gateways that
// share it. Races are real: 50 sockets hold back the last byte of their request and release it
// together (test/helpers/release_at_once.ts). The expiry rules, with a clock moved by hand, are
// in test/workers/grants/refresh_token.test.ts.
import t, { type Test } from 'tap';
import { Redis } from 'ioredis';
import * as oidc from 'openid-client';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { startTestGateway, type TestGateway } from '../helpers/test_gateway.js';
import { addPasswordFixtures, offlineUserClient, passwordFixtures } from '../helpers/password_users.js';
import { startRedisServer, type RedisServer } from '../helpers/redis_server.js';
import { formPost, releaseAtOnce, type RawAnswer } from '../helpers/release_at_once.js';
import { basicAuthorization } from '../helpers/basic_authorization.js';

const fixtures = await passwordFixtures();
const rejectedBody = '{"error":"invalid_grant","error_description":"The refresh token is invalid, expired or revoked."}';
const inactive = { active: false };
// Generous: on a loaded CI machine a starved worker can miss a tighter deadline, and the race
// would then see an honest 503 instead of invalid_grant. The outage tests wait this long once.
const commandTimeoutMs = 1000;

const userClient = offlineUserClient;

function patchFor(store: Record<string, unknown>) {
  return (raw: Record<string, unknown>) => {
    addPasswordFixtures(raw, fixtures);
    raw.store = store;
    raw.workers = { threads: 2 };
    (raw.clients as unknown[]).push(
      userClient('app', { absoluteRefreshTokenLifetime: 3600, slidingRefreshTokenLifetime: 600 }),
      userClient('app2'),
      // Strict reuse detection: no grace window (refreshTokenReuseGraceSeconds, default 5 s).
      userClient('app-strict', { refreshTokenReuseGraceSeconds: 0 }),
      userClient('app-reuse', {
        refreshTokenUsage: 'reUse',
        refreshTokenExpiration: 'sliding',
        slidingRefreshTokenLifetime: 600,
        absoluteRefreshTokenLifetime: 3600,
      }),
      userClient('no-offline', { allowOfflineAccess: false, allowedScopes: ['api1'] }),
    );
  };
}

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);
const redisStore = { type: 'redis', url: redis.url, commandTimeoutMs };

// Gateway start dominates this file's time: all three boot at once.
const [memoryGateway, redisGateway, secondRedisGateway] = await Promise.all([
  startTestGateway(t, { patch: patchFor({ type: 'memory' }) }),
  startTestGateway(t, { patch: patchFor(redisStore) }),
  startTestGateway(t, { patch: patchFor(redisStore) }),
]);

interface Session {
  gw: TestGateway;
  client(clientId?: string): Promise<oidc.Configuration>;
  /** Password grant for alice: the user token a refresh family starts from. */
  login(clientId?: string, scope?: string): Promise<{ access_token: string; refresh_token: string; scope?: string | undefined }>;
  introspect(token: string, clientId?: string): Promise<oidc.IntrospectionResponse>;
  verify(token: string, audience?: string): Promise<Record<string, unknown>>;
}

function session(gw: TestGateway): Session {
  const configs = new Map<string, Promise<oidc.Configuration>>();
  const client = (clientId = 'app') => {
    let config = configs.get(clientId);
    if (config === undefined) {
      config = oidc.discovery(new URL(gw.config.issuer), clientId, undefined, oidc.ClientSecretBasic('secret'), {
        execute: [oidc.allowInsecureRequests],
      });
      configs.set(clientId, config);
    }
    return config;
  };
  const jwks = createRemoteJWKSet(new URL(`${gw.url}/.well-known/openid-configuration/jwks`));
  return {
    gw,
    client,
    async login(clientId = 'app', scope = 'api1 api2 offline_access') {
      const tokens = await oidc.genericGrantRequest(await client(clientId), 'password', { username: 'alice', password: 'alice-pw', scope });
      if (tokens.refresh_token === undefined) throw new Error('the password grant issued no refresh token');
      return { access_token: tokens.access_token, refresh_token: tokens.refresh_token, scope: tokens.scope };
    },
    async introspect(token, clientId = 'app') {
      return oidc.tokenIntrospection(await client(clientId), token);
    },
    async verify(token, audience) {
      const { payload } = await jwtVerify(token, jwks, { issuer: gw.config.issuer, typ: 'at+jwt', ...(audience ? { audience } : {}) });
      return payload;
    },
  };
}

/** The error openid-client rejected with, or 'resolved'. */
const failure = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => 'resolved',
    (e: unknown) => e,
  );

const refreshRequest = (refreshToken: string, clientId = 'app') =>
  formPost('/connect/token', { grant_type: 'refresh_token', refresh_token: refreshToken }, { clientId, secret: 'secret' });

/** What every store must get right. */
function refreshScenarios(t: Test, gw: TestGateway): void {
  const s = session(gw);

  t.test('rotates a one-time refresh token and issues a verifiable access token', async (t) => {
    const first = await s.login();
    const refreshed = await oidc.refreshTokenGrant(await s.client(), first.refresh_token);
    t.type(refreshed.refresh_token, 'string');
    t.not(refreshed.refresh_token, first.refresh_token, 'a new handle');
    t.equal(refreshed.scope, 'api1 api2 offline_access');
    const claims = await s.verify(refreshed.access_token, 'urn:api1');
    t.match(claims, { sub: 'sub-alice', client_id: 'app', aud: ['urn:api1', 'urn:api2'], scope: 'api1 api2 offline_access', idp: 'local' });
    t.not(claims.jti, decodeJwt(first.access_token).jti);
    t.same(await s.introspect(first.refresh_token), inactive, 'the old token is retired');
    t.match(await s.introspect(refreshed.refresh_token ?? ''), {
      active: true,
      token_type: 'refresh_token',
      client_id: 'app',
      sub: 'sub-alice',
    });
    const again = await oidc.refreshTokenGrant(await s.client(), refreshed.refresh_token ?? '');
    t.not(again.refresh_token, refreshed.refresh_token, 'and again');
  });

  t.test('reuse of a rotated token is refused and revokes the whole family, access tokens included', async (t) => {
    const first = await s.login();
    const second = await oidc.refreshTokenGrant(await s.client(), first.refresh_token);
    const third = await oidc.refreshTokenGrant(await s.client(), second.refresh_token ?? '');
    for (const token of [first.access_token, second.access_token, third.access_token]) {
      t.match(await s.introspect(token), { active: true }, 'live before the reuse');
    }
    t.match(await failure(oidc.refreshTokenGrant(await s.client(), first.refresh_token)), {
      status: 400,
      error: 'invalid_grant',
      error_description: 'The refresh token is invalid, expired or revoked.',
    });
    t.match(
      await failure(oidc.refreshTokenGrant(await s.client(), third.refresh_token ?? '')),
      { error: 'invalid_grant' },
      'the live successor is dead',
    );
    t.same(await s.introspect(third.refresh_token ?? ''), inactive);
    for (const token of [first.access_token, second.access_token, third.access_token]) {
      t.same(await s.introspect(token), inactive, 'every access token of the family is inactive');
    }
    const other = await s.login();
    t.match(await s.introspect(other.access_token), { active: true }, 'another family of the same user is untouched');
  });

  t.test('narrows the scope of the access token and keeps the original on the refresh token', async (t) => {
    const first = await s.login();
    const narrowed = await oidc.refreshTokenGrant(await s.client(), first.refresh_token, { scope: 'api1' });
    t.equal(narrowed.scope, 'api1');
    t.match(await s.verify(narrowed.access_token, 'urn:api1'), { scope: 'api1', aud: 'urn:api1' });
    t.match(await s.introspect(narrowed.refresh_token ?? ''), { active: true, scope: 'api1 api2 offline_access' });
    const full = await oidc.refreshTokenGrant(await s.client(), narrowed.refresh_token ?? '');
    t.equal(full.scope, 'api1 api2 offline_access');
  });

  t.test('refuses a wider scope with invalid_scope and leaves the token usable', async (t) => {
    const first = await s.login('app', 'api1 offline_access');
    t.match(await failure(oidc.refreshTokenGrant(await s.client(), first.refresh_token, { scope: 'api1 api2' })), {
      status: 400,
      error: 'invalid_scope',
      error_description: 'The requested scope exceeds the scope originally granted.',
    });
    const blank = await oidc.refreshTokenGrant(await s.client(), first.refresh_token, { scope: ' ' });
    t.equal(blank.scope, 'api1 offline_access', "a blank scope is the original grant, not the client's defaults");
    const refreshed = await oidc.refreshTokenGrant(await s.client(), blank.refresh_token ?? '');
    t.equal(refreshed.scope, 'api1 offline_access');
  });

  t.test('reUse returns the same handle each time; sliding shows in its expiry', async (t) => {
    const first = await s.login('app-reuse');
    const client = await s.client('app-reuse');
    const a = await oidc.refreshTokenGrant(client, first.refresh_token);
    const b = await oidc.refreshTokenGrant(client, first.refresh_token);
    t.equal(a.refresh_token, first.refresh_token);
    t.equal(b.refresh_token, first.refresh_token);
    t.not(decodeJwt(a.access_token).jti, decodeJwt(b.access_token).jti);
    const now = Math.floor(Date.now() / 1000);
    const introspected = await s.introspect(first.refresh_token, 'app-reuse');
    t.ok(Math.abs((introspected.exp ?? 0) - (now + 600)) <= 2, 'sliding: 600 s from the last use');
    const absolute = await s.introspect((await s.login()).refresh_token);
    t.ok(Math.abs((absolute.exp ?? 0) - (now + 3600)) <= 2, 'absolute: 3600 s from issue');
  });

  t.test('binds the token to its client', async (t) => {
    const first = await s.login();
    t.match(await failure(oidc.refreshTokenGrant(await s.client('app2'), first.refresh_token)), { status: 400, error: 'invalid_grant' });
    t.same(await s.introspect(first.refresh_token, 'app2'), inactive, 'invisible to the other client');
    const unauthenticated = await fetch(gw.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: 'app' }).toString(),
    });
    t.equal(unauthenticated.status, 401, 'a confidential client must authenticate');
    t.equal(await unauthenticated.text(), '{"error":"invalid_client","error_description":"Client authentication failed."}');
    const own = await oidc.refreshTokenGrant(await s.client(), first.refresh_token);
    t.type(own.refresh_token, 'string', 'the attempt did not consume it');
    t.match(await s.introspect(own.access_token), { active: true }, 'nor revoke the family');
  });

  t.test('refuses offline_access to a client without allowOfflineAccess', async (t) => {
    const answer = await failure(
      oidc.genericGrantRequest(await s.client('no-offline'), 'password', {
        username: 'alice',
        password: 'alice-pw',
        scope: 'api1 offline_access',
      }),
    );
    t.match(answer, { status: 400, error: 'invalid_scope' });
    const plain = await oidc.genericGrantRequest(await s.client('no-offline'), 'password', {
      username: 'alice',
      password: 'alice-pw',
      scope: 'api1',
    });
    t.equal(plain.refresh_token, undefined);
  });

  t.test('without a grace window, of 50 refreshes of one token released at once, exactly one wins and the family is revoked', async (t) => {
    await raceOnce(t, s, [gw.port]);
  });

  t.test('within the grace window, 50 refreshes of one token released at once all get its one successor', async (t) => {
    await raceWithinGrace(t, s, [gw.port]);
  });
}

/**
 * RFC 9700 §4.14.2 with no grace window (`app-strict`): the server cannot tell a retry from an
 * attacker replaying a stolen token, so the 49 losers are reuse and revoke the family. The
 * winner's new refresh token and access token die with it: no refresh token of the family is
 * left alive (the "at most one").
 */
async function raceOnce(t: Test, s: Session, ports: readonly number[]): Promise<void> {
  const first = await s.login('app-strict');
  const targets = Array.from({ length: 50 }, (_, i) => ports[i % ports.length] as number);
  const answers = await releaseAtOnce(targets, refreshRequest(first.refresh_token, 'app-strict'));
  const winners = answers.filter((a) => a.status === 200);
  const losers = answers.filter((a) => a.status !== 200);
  t.equal(winners.length, 1, 'exactly one success');
  t.equal(losers.length, 49);
  t.same([...new Set(losers.map((a) => `${a.status} ${a.body}`))], [`400 ${rejectedBody}`], 'every other answer is invalid_grant');
  const won = JSON.parse(winners[0]?.body ?? '{}') as { access_token: string; refresh_token: string };
  t.type(won.refresh_token, 'string');
  t.same(await s.introspect(won.refresh_token, 'app-strict'), inactive, "the winner's refresh token died with its family");
  t.same(await s.introspect(first.refresh_token, 'app-strict'), inactive);
  t.same(await s.introspect(won.access_token, 'app-strict'), inactive, "the winner's access token is on the deny list");
  t.same(await s.introspect(first.access_token, 'app-strict'), inactive);
  const after = await releaseAtOnce([ports[0] as number], refreshRequest(won.refresh_token, 'app-strict'));
  t.same(
    after.map((a) => `${a.status} ${a.body}`),
    [`400 ${rejectedBody}`],
    'no live refresh token is left in the family',
  );
}

/**
 * The same race within the grace window (docs/storage.md, "Refresh grace window"): one request
 * rotates, the 49 others are retries of it and get the same successor with access tokens of their
 * own. One chain continues; once its next token is used, the first one is reuse again.
 */
async function raceWithinGrace(t: Test, s: Session, ports: readonly number[]): Promise<void> {
  const first = await s.login();
  const targets = Array.from({ length: 50 }, (_, i) => ports[i % ports.length] as number);
  const answers = await releaseAtOnce(targets, refreshRequest(first.refresh_token));
  t.same([...new Set(answers.map((a) => a.status))], [200], 'every one is answered');
  const bodies = answers.map((a) => JSON.parse(a.body) as { access_token: string; refresh_token: string });
  const successors = [...new Set(bodies.map((b) => b.refresh_token))];
  t.equal(successors.length, 1, 'all with the one successor');
  t.equal(new Set(bodies.map((b) => decodeJwt(b.access_token).jti)).size, 50, 'and 50 access tokens');
  const next = await releaseAtOnce([ports[0] as number], refreshRequest(successors[0] as string));
  t.equal(next[0]?.status, 200, 'the successor continues the chain');
  const reuse = await releaseAtOnce([ports[0] as number], refreshRequest(first.refresh_token));
  t.same(
    reuse.map((a) => `${a.status} ${a.body}`),
    [`400 ${rejectedBody}`],
    'the first token, its successor used, is reuse',
  );
  t.same(await s.introspect(bodies[0]?.access_token ?? ''), inactive, 'which revoked the family, the retries included');
}

t.test('memory store', async (t) => {
  refreshScenarios(t, memoryGateway);
});

t.test('redis store', async (t) => {
  refreshScenarios(t, redisGateway);
});

t.test('two gateways sharing one redis', async (t) => {
  const a = session(redisGateway);
  const b = session(secondRedisGateway);

  t.test('a token issued by one gateway refreshes at the other, and reuse there revokes it here', async (t) => {
    const first = await a.login('app-strict');
    const second = await oidc.refreshTokenGrant(await b.client('app-strict'), first.refresh_token);
    t.match(await failure(oidc.refreshTokenGrant(await a.client('app-strict'), first.refresh_token)), { error: 'invalid_grant' });
    t.same(await b.introspect(second.refresh_token ?? '', 'app-strict'), inactive);
    t.same(await b.introspect(second.access_token, 'app-strict'), inactive);
  });

  t.test('a retry at one gateway of a rotation made at the other gets the same successor', async (t) => {
    const first = await a.login();
    const second = await oidc.refreshTokenGrant(await b.client(), first.refresh_token);
    const retried = await oidc.refreshTokenGrant(await a.client(), first.refresh_token);
    t.equal(retried.refresh_token, second.refresh_token);
    t.match(await b.introspect(second.access_token), { active: true });
  });

  t.test('without a grace window, of 50 refreshes split across both gateways, exactly one wins and the family is revoked', async (t) => {
    await raceOnce(t, a, [redisGateway.port, secondRedisGateway.port]);
  });

  t.test('within the grace window, 50 refreshes split across both gateways all get the one successor', async (t) => {
    await raceWithinGrace(t, a, [redisGateway.port, secondRedisGateway.port]);
  });
});

t.test('redis outage during a refresh', async (t) => {
  const s = session(redisGateway);
  const refresh = (token: string) => releaseAtOnce([redisGateway.port], refreshRequest(token)).then(([answer]) => answer as RawAnswer);
  const unavailable = '{"error":"temporarily_unavailable","error_description":"The service is temporarily unavailable. Retry later."}';

  /** Introspection reads the store without changing it: polled until the gateway is back. */
  async function waitUntilServed(token: string): Promise<void> {
    const until = Date.now() + 8000;
    for (;;) {
      const res = await fetch(`${redisGateway.url}/connect/introspect`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization('app') },
        body: new URLSearchParams({ token }).toString(),
      });
      const text = await res.text();
      if (res.status === 200) return;
      if (res.status !== 503) throw new Error(`introspection answered ${res.status} ${text}`);
      if (Date.now() > until) throw new Error('the gateway did not reconnect to redis');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  const skip = redis.managed ? false : 'the fallback redis-server cannot be stopped';
  t.test('a stopped redis answers 503 with Retry-After at once, and the old token works after restart', { skip }, async (t) => {
    const first = await s.login();
    // The helper's redis-server keeps no data across a restart; a production one would (RDB or
    // AOF). The test carries the data across itself, so that only the gateway is under test.
    const saved = await snapshot(redis);
    await redis.stop();
    const started = performance.now();
    const during = await refresh(first.refresh_token);
    const elapsed = performance.now() - started;
    t.equal(during.status, 503);
    t.equal(during.body, unavailable);
    t.equal(during.headers['retry-after'], '2');
    t.equal(during.headers['cache-control'], 'no-store');
    t.ok(elapsed < commandTimeoutMs + 1000, `answered in ${Math.round(elapsed)} ms`);
    await redis.start();
    await restore(redis, saved);
    await waitUntilServed(first.refresh_token);
    const after = await refresh(first.refresh_token);
    t.equal(after.status, 200, `the old token still works: ${after.body}`);
    const next = (JSON.parse(after.body) as { refresh_token: string }).refresh_token;
    t.match(await s.introspect(next), { active: true }, 'its successor is live');
    t.match(await s.introspect(first.access_token), { active: true }, 'no family was revoked');
  });

  t.test('a frozen redis answers 503 within the command timeout; the old token works once it thaws', { skip }, async (t) => {
    const first = await s.login();
    redis.pause();
    let resumed = false;
    t.teardown(() => {
      if (!resumed) redis.resume();
    });
    const started = performance.now();
    const during = await refresh(first.refresh_token);
    const elapsed = performance.now() - started;
    redis.resume();
    resumed = true;
    t.equal(during.status, 503);
    t.equal(during.body, unavailable);
    t.equal(during.headers['retry-after'], '2');
    t.ok(elapsed < commandTimeoutMs + 1500, `answered in ${Math.round(elapsed)} ms`);
    await waitUntilServed(first.refresh_token);
    const after = await refresh(first.refresh_token);
    t.equal(after.status, 200, `nothing was half rotated while frozen: ${after.body}`);
  });
});

/** Every key with its remaining TTL and DUMP payload. */
async function snapshot(server: RedisServer): Promise<[string, number, Buffer][]> {
  const client = new Redis(server.url, { lazyConnect: true });
  await client.connect();
  try {
    const saved: [string, number, Buffer][] = [];
    for (const key of await client.keys('*')) {
      const [ttl, dump] = await Promise.all([client.pttl(key), client.dumpBuffer(key)]);
      if (dump !== null && ttl !== -2) saved.push([key, ttl > 0 ? ttl : 0, dump]);
    }
    return saved;
  } finally {
    client.disconnect();
  }
}

async function restore(server: RedisServer, saved: readonly [string, number, Buffer][]): Promise<void> {
  const client = new Redis(server.url, { lazyConnect: true });
  await client.connect();
  try {
    for (const [key, ttl, dump] of saved) await client.restore(key, ttl, dump, 'REPLACE');
  } finally {
    client.disconnect();
  }
}
