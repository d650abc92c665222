// The refresh grace window end to end (docs/storage.md, "Refresh grace window"; RFC 9700 §4.14.2):
// a real gateway on a private redis-server. Rotations whose answers never reach the client (Redis
// holding writes under `CLIENT PAUSE … WRITE`, as a failover does, then applying them late; an
// answer dropped on the way back) are retried with the same refresh token, and every chain must
// continue; reuse outside the window, or after the successor was used, still revokes the family.
import t from 'tap';
import { Redis } from 'ioredis';
import * as oidc from 'openid-client';
import { startTestGateway } from '../helpers/test_gateway.js';
import { addPasswordFixtures, offlineUserClient, passwordFixtures } from '../helpers/password_users.js';
import { startRedisServer } from '../helpers/redis_server.js';
import { formPost, releaseAtOnce, type RawAnswer } from '../helpers/release_at_once.js';

const fixtures = await passwordFixtures();
const rejectedBody = '{"error":"invalid_grant","error_description":"The refresh token is invalid, expired or revoked."}';
const pauseMs = 2000;
const chains = 8;

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);
// CLIENT PAUSE stops every client of the server: only on a redis-server of this test's own.
const skip = redis.managed ? false : 'the fallback redis-server is shared; it cannot be paused';

const gw = await startTestGateway(t, {
  patch: (raw) => {
    addPasswordFixtures(raw, fixtures);
    raw.store = { type: 'redis', url: redis.url, commandTimeoutMs: 500 };
    raw.workers = { threads: 2 };
    (raw.clients as unknown[]).push(
      // The default window (5 s).
      offlineUserClient('app'),
      offlineUserClient('strict', { refreshTokenReuseGraceSeconds: 0 }),
      offlineUserClient('brief', { refreshTokenReuseGraceSeconds: 1 }),
    );
  },
});

const admin = new Redis(redis.url, { lazyConnect: true });
await admin.connect();
t.teardown(() => admin.disconnect());

const configs = new Map<string, Promise<oidc.Configuration>>();
function client(clientId: string, fetch?: oidc.CustomFetch): Promise<oidc.Configuration> {
  const cached = fetch === undefined ? configs.get(clientId) : undefined;
  if (cached !== undefined) return cached;
  const config = oidc
    .discovery(new URL(gw.config.issuer), clientId, undefined, oidc.ClientSecretBasic('secret'), { execute: [oidc.allowInsecureRequests] })
    .then((config) => {
      if (fetch !== undefined) config[oidc.customFetch] = fetch;
      return config;
    });
  if (fetch === undefined) configs.set(clientId, config);
  return config;
}

async function login(clientId: string): Promise<{ access_token: string; refresh_token: string }> {
  const tokens = await oidc.genericGrantRequest(await client(clientId), 'password', {
    username: 'alice',
    password: 'alice-pw',
    scope: 'api1 offline_access',
  });
  if (tokens.refresh_token === undefined) throw new Error('no refresh token');
  return { access_token: tokens.access_token, refresh_token: tokens.refresh_token };
}

const refresh = async (clientId: string, token: string): Promise<RawAnswer> =>
  (
    await releaseAtOnce(
      [gw.port],
      formPost('/connect/token', { grant_type: 'refresh_token', refresh_token: token }, { clientId, secret: 'secret' }),
    )
  )[0] as RawAnswer;

const active = async (clientId: string, token: string): Promise<boolean> =>
  (await oidc.tokenIntrospection(await client(clientId), token)).active;

const refreshTokenIn = (answer: RawAnswer): string => (JSON.parse(answer.body) as { refresh_token: string }).refresh_token;

/**
 * Logs in `chains` times, then refreshes every chain at once while Redis holds writes: every
 * rotation times out (503) and Redis applies it when the pause ends. Resolves the first tokens
 * and the answers during the pause, once the pause is over.
 */
async function refreshDuringWritePause(clientId: string) {
  // One after the other: parallel sign-ins of one user are what the password throttle limits.
  const firsts: { access_token: string; refresh_token: string }[] = [];
  for (let i = 0; i < chains; i += 1) firsts.push(await login(clientId));
  const started = performance.now();
  await admin.call('CLIENT', 'PAUSE', String(pauseMs), 'WRITE');
  const during = await Promise.all(firsts.map((first) => refresh(clientId, first.refresh_token)));
  const left = pauseMs - (performance.now() - started);
  // The paused rotations run when the pause ends; a little after, so they have.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, left) + 300));
  return { firsts, during };
}

t.test('during CLIENT PAUSE WRITE the rotations time out, and retries with the same tokens continue every chain', { skip }, async (t) => {
  const { firsts, during } = await refreshDuringWritePause('app');
  t.same(
    during.map((a) => a.status),
    Array(chains).fill(503),
    'every refresh answered 503 while writes were held',
  );
  const retries = await Promise.all(firsts.map((first) => refresh('app', first.refresh_token)));
  t.same(
    retries.map((a) => `${a.status}${a.status === 200 ? '' : ` ${a.body}`}`),
    Array(chains).fill('200'),
    'every retry got a successor, none was refused as reuse',
  );
  const successors = retries.map(refreshTokenIn);
  t.equal(new Set(successors).size, chains, 'one successor per chain');
  const again = await Promise.all(firsts.map((first) => refresh('app', first.refresh_token)));
  t.same(again.map(refreshTokenIn), successors, 'a second retry gets the same successor: one live chain each');
  const next = await Promise.all(successors.map((successor) => refresh('app', successor)));
  t.same(
    next.map((a) => a.status),
    Array(chains).fill(200),
    'each successor refreshes: every chain continues',
  );
  for (const first of firsts) t.ok(await active('app', first.access_token), 'no family was revoked');
});

t.test(
  'with refreshTokenReuseGraceSeconds 0 the same pause loses nothing: Redis refuses the rotations it runs after their callers gave up',
  { skip },
  async (t) => {
    const { firsts, during } = await refreshDuringWritePause('strict');
    t.same(
      during.map((a) => a.status),
      Array(chains).fill(503),
    );
    // Each rotation reached Redis within its deadline on Redis's clock, or waited out the pause and
    // found that deadline past: then it did nothing (docs/storage.md, "Late rotations"), and the
    // old token is live. Strict reuse detection has nothing to mistake for reuse.
    const retries = await Promise.all(firsts.map((first) => refresh('strict', first.refresh_token)));
    t.same(
      retries.map((a) => `${a.status}${a.status === 200 ? '' : ` ${a.body}`}`),
      Array(chains).fill('200'),
      'every retry is an ordinary refresh',
    );
    for (const first of firsts) t.ok(await active('strict', first.access_token), 'and its family lives');
  },
);

t.test('an answer dropped on its way back: openid-client retries with the same token and continues', async (t) => {
  const first = await login('app');
  let dropped = 0;
  // Lets the request reach the gateway and be answered, then loses the answer, once.
  const dropFirstRefresh: oidc.CustomFetch = async (url, options) => {
    const response = await fetch(url, options as RequestInit);
    if (dropped === 0 && String(options.body).includes('grant_type=refresh_token')) {
      dropped += 1;
      await response.arrayBuffer();
      throw new TypeError('fetch failed: the connection was reset');
    }
    return response;
  };
  const lossy = await client('app', dropFirstRefresh);
  await t.rejects(oidc.refreshTokenGrant(lossy, first.refresh_token), TypeError, 'the first answer is lost');
  t.equal(dropped, 1);
  const retried = await oidc.refreshTokenGrant(lossy, first.refresh_token);
  t.type(retried.refresh_token, 'string', 'the retry is answered');
  const next = await oidc.refreshTokenGrant(await client('app'), retried.refresh_token ?? '');
  t.type(next.refresh_token, 'string', 'and its refresh token works');
  t.ok(await active('app', first.access_token), 'the family is live');
});

t.test('reuse after the window revokes the family', async (t) => {
  const first = await login('brief');
  const second = await refresh('brief', first.refresh_token);
  t.equal(second.status, 200);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const reuse = await refresh('brief', first.refresh_token);
  t.equal(`${reuse.status} ${reuse.body}`, `400 ${rejectedBody}`);
  t.notOk(await active('brief', refreshTokenIn(second)), 'the unused successor died with its family');
  t.notOk(await active('brief', first.access_token));
});

t.test('reuse after the successor was used revokes the family, inside the window too', async (t) => {
  const first = await login('app');
  const second = refreshTokenIn(await refresh('app', first.refresh_token));
  const third = await refresh('app', second);
  t.equal(third.status, 200);
  const reuse = await refresh('app', first.refresh_token);
  t.equal(`${reuse.status} ${reuse.body}`, `400 ${rejectedBody}`);
  t.notOk(await active('app', refreshTokenIn(third)), 'the live token died with its family');
  t.notOk(await active('app', first.access_token));
});

t.test('a dump of the store holds no usable refresh token while a retry is possible', async (t) => {
  const first = await login('app');
  const successor = refreshTokenIn(await refresh('app', first.refresh_token));
  const secrets = [first.refresh_token, successor].flatMap((handle) => [
    Buffer.from(handle),
    // The 32 secret bytes after the 16 of the family id.
    Buffer.from(handle, 'base64url').subarray(16),
  ]);
  const keys = await admin.keys('*');
  t.ok(
    keys.some((key) => key.endsWith(':chain')),
    'the chain record, which holds the retry nonce, is there',
  );
  const holding: string[] = [];
  for (const key of keys) {
    const type = await admin.type(key);
    const value =
      type === 'string'
        ? ((await admin.getBuffer(key)) ?? Buffer.alloc(0))
        : type === 'hash'
          ? Buffer.concat(Object.values(await admin.hgetallBuffer(key)))
          : Buffer.alloc(0);
    if (secrets.some((secret) => key.includes(secret.toString()) || value.includes(secret))) holding.push(key);
  }
  t.same(holding, [], 'no key names or holds a handle or its secret bytes');
  const retried = await refresh('app', first.refresh_token);
  t.equal(refreshTokenIn(retried), successor, 'yet the old handle opens its retry record');
});
