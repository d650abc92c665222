// A long Redis stall is not a refresh-token revocation (docs/storage.md, "Refresh grace window";
// RFC 9700 §4.14.2): Redis paused about 20 s by `CLIENT PAUSE 5000 ALL` reissued as each pause
// ends (what an operator or a failover script does; between two pauses Redis runs what queued,
// rotations included, while the gateways have long given up on them), and 64 clients that refresh
// and retry their refresh token every 200 ms without waiting for `Retry-After`. Every rotation the
// stall applied late must reach its client as the same successor, and every chain continue; no
// family is revoked. A real gateway on a private redis-server; about 30 s by nature.
import t from 'tap';
import { Redis } from 'ioredis';
import { startTestGateway } from '../helpers/test_gateway.js';
import { hash as argon2Hash } from '@node-rs/argon2';
import { offlineUserClient } from '../helpers/password_users.js';
import { startRedisServer } from '../helpers/redis_server.js';
import { formPost, releaseAtOnce, type RawAnswer } from '../helpers/release_at_once.js';

const clients = 64;
const stallMs = 20_000;
const pauseMs = 5000;
const retryEveryMs = 200;

const fileStarted = performance.now();
// One user, hashed with argon2id at its cheapest (the verifier reads the parameters from the
// hash): 64 sign-ins must not spend the test's time on password hashing.
const cheapHash = await argon2Hash('alice-pw', { algorithm: 2, memoryCost: 1024, timeCost: 1, parallelism: 1 });
const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);
// CLIENT PAUSE stops every client of the server: only on a redis-server of this test's own.
const skip = redis.managed ? false : 'the fallback redis-server is shared; it cannot be paused';

const gw = await startTestGateway(t, {
  patch: (raw) => {
    raw.users = [{ subjectId: 'sub-alice', username: 'alice', passwordHash: cheapHash }];
    raw.store = { type: 'redis', url: redis.url, commandTimeoutMs: 500 };
    raw.workers = { threads: 2 };
    // The default grace window (5 s), far shorter than the stall.
    (raw.clients as unknown[]).push(offlineUserClient('app'));
  },
});

t.comment(`fixtures, redis and gateway: ${Math.round(performance.now() - fileStarted)} ms`);
const admin = new Redis(redis.url, { lazyConnect: true });
await admin.connect();
t.teardown(() => admin.disconnect());

const post = async (params: Record<string, string>): Promise<RawAnswer> =>
  (await releaseAtOnce([gw.port], formPost('/connect/token', params, { clientId: 'app', secret: 'secret' })))[0] as RawAnswer;

async function login(): Promise<string> {
  const answer = await post({ grant_type: 'password', username: 'alice', password: 'alice-pw', scope: 'api1 offline_access' });
  if (answer.status !== 200) throw new Error(`sign-in answered ${answer.status} ${answer.body}`);
  return (JSON.parse(answer.body) as { refresh_token: string }).refresh_token;
}

interface Chain {
  token: string;
  rotations: number;
  answers: Map<string, number>;
  refused: string[];
}

/** Refreshes, and on anything but 200 retries the same token after `retryEveryMs`, until `until`. */
async function drive(chain: Chain, until: () => boolean): Promise<void> {
  while (!until()) {
    const answer = await post({ grant_type: 'refresh_token', refresh_token: chain.token });
    const label = String(answer.status);
    chain.answers.set(label, (chain.answers.get(label) ?? 0) + 1);
    if (answer.status === 200) {
      chain.token = (JSON.parse(answer.body) as { refresh_token: string }).refresh_token;
      chain.rotations += 1;
    } else if (answer.status === 400) {
      chain.refused.push(answer.body);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, retryEveryMs));
  }
}

t.test('a 20 s stall of Redis with 64 clients retrying every 200 ms revokes no family, and every chain continues', { skip }, async (t) => {
  // One after the other: parallel sign-ins of one user are what the password throttle limits.
  const chains: Chain[] = [];
  const signIn = performance.now();
  for (let i = 0; i < clients; i += 1) chains.push({ token: await login(), rotations: 0, answers: new Map(), refused: [] });
  t.comment(`64 sign-ins: ${Math.round(performance.now() - signIn)} ms`);

  let stalled = true;
  const stall = (async () => {
    const started = performance.now();
    // Each reissue is sent while the pause it follows still holds, so it runs the moment that
    // one ends, after whatever else queued meanwhile (the gateways' rotations among it).
    await admin.call('CLIENT', 'PAUSE', String(pauseMs), 'ALL');
    while (performance.now() - started < stallMs - pauseMs) {
      await new Promise((resolve) => setTimeout(resolve, pauseMs - 500));
      await admin.call('CLIENT', 'PAUSE', String(pauseMs), 'ALL');
    }
    await admin.call('PING');
    stalled = false;
  })();
  // Every chain refreshes during the stall and keeps retrying; then two more rotations each.
  const during = chains.map((chain) => drive(chain, () => !stalled));
  await stall;
  await Promise.all(during);
  const after = chains.map((chain) => chain.rotations);
  await Promise.all(chains.map((chain, i) => drive(chain, () => chain.rotations >= (after[i] as number) + 2)));

  const statuses = new Map<string, number>();
  for (const chain of chains) for (const [status, n] of chain.answers) statuses.set(status, (statuses.get(status) ?? 0) + n);
  t.comment(`answers: ${JSON.stringify(Object.fromEntries(statuses))}`);
  t.same(
    chains.flatMap((chain) => chain.refused),
    [],
    'no refresh was refused as reuse',
  );
  t.ok(
    chains.every((chain, i) => chain.rotations >= (after[i] as number) + 2),
    'every chain continued after the stall',
  );
  const revoked = await admin.keys('*:revoked');
  t.same(revoked, [], 'no family was revoked');
  t.ok((statuses.get('503') ?? 0) >= clients, 'the stall answered 503 (the test did stall Redis)');
});
