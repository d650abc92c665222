// `tessera start` with Redis unreachable (docs/operations.md, "Starting without the store"): it
// starts and listens, /readyz answers 503, client_credentials (no store, key files) answers 200,
// what needs the store answers 503 with Retry-After, and once a real Redis comes up on the
// configured port the gateway recovers by itself.
import t from 'tap';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { freePort } from '../../helpers/free_port.js';
import { offlineUserClient } from '../../helpers/password_users.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { startSpawnedGateway } from '../../helpers/spawned_gateway.js';
import { sha256Secret } from '../../helpers/test_gateway.js';
import { newFamilyId, newRefreshHandle } from '../../../core/records/refresh_token_handle.js';

t.setTimeout(300_000);

interface Answer {
  status: number;
  retryAfter: string | null;
  body: string;
}

async function call(url: string, init?: RequestInit): Promise<Answer> {
  const response = await fetch(url, init);
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.text() };
}

function tokenRequest(tokenUrl: string, clientId: string, form: Record<string, string>): Promise<Answer> {
  return call(tokenUrl, {
    method: 'POST',
    headers: { authorization: basicAuthorization(clientId), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
}

// Well formed, so that the grant asks the store about it.
const unknownRefreshToken = newRefreshHandle(newFamilyId()).handle;

t.test('starts with Redis unreachable, serves what needs no store, recovers when Redis comes up', async (t) => {
  // Nothing listens here yet; the Redis started later takes this port.
  const redisPort = await freePort();
  const gateway = await startSpawnedGateway(t, {
    validators: [],
    untilListening: true,
    patch: (raw) => {
      raw.store = { type: 'redis', url: `redis://127.0.0.1:${redisPort}` };
      (raw.clients as unknown[]).push(
        offlineUserClient('app'),
        // The pages need a client with a redirect URI to show the sign-in page.
        {
          clientId: 'web',
          clientSecrets: [{ value: sha256Secret('secret') }],
          allowedGrantTypes: ['authorization_code'],
          redirectUris: ['http://127.0.0.1/callback'],
          allowedScopes: ['openid'],
          requirePkce: false,
        },
      );
    },
  });
  t.teardown(async () => {
    await gateway.terminate();
  });

  const readyz = await call(`${gateway.url}/readyz`);
  t.equal(readyz.status, 503, '/readyz: not ready without the store');
  t.match(readyz.body, /store not serving/);
  t.match(readyz.body, /no page secret/);
  t.match(gateway.output(), /starting without the page secret/, 'the log says why');

  const machine = await tokenRequest(gateway.tokenUrl, 'm2m', { grant_type: 'client_credentials', scope: 'api1' });
  t.equal(machine.status, 200, `client_credentials needs no store: ${machine.body}`);

  const refresh = await tokenRequest(gateway.tokenUrl, 'app', { grant_type: 'refresh_token', refresh_token: unknownRefreshToken });
  t.equal(refresh.status, 503, 'a grant that needs the store: 503');
  t.match(refresh.body, /temporarily_unavailable/);
  t.ok(Number(refresh.retryAfter) > 0, 'with Retry-After');

  const authorize = `${gateway.url}/connect/authorize?client_id=web&response_type=code&scope=openid&redirect_uri=${encodeURIComponent('http://127.0.0.1/callback')}`;
  const page = await call(authorize);
  t.equal(page.status, 503, 'the sign-in page: 503 (its cookies need the page secret)');
  t.ok(Number(page.retryAfter) > 0, 'with Retry-After');

  // Redis comes up: no restart, the gateway finds it.
  const redis = await startRedisServer({ port: redisPort });
  t.teardown(() => redis.stop());
  if (!redis.managed) {
    t.comment(redis.warning ?? 'no redis-server');
    return;
  }
  const until = Date.now() + 120_000;
  let ready = readyz;
  while (ready.status !== 200 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    ready = await call(`${gateway.url}/readyz`);
  }
  t.equal(ready.status, 200, `/readyz turns 200 once the store answers: ${ready.body}`);
  t.match(gateway.output(), /page secret loaded/);

  const after = await tokenRequest(gateway.tokenUrl, 'app', { grant_type: 'refresh_token', refresh_token: unknownRefreshToken });
  t.equal(after.status, 400, `the store answers: an unknown refresh token is invalid_grant, not 503 (${after.body})`);
  t.match(after.body, /invalid_grant/);
  t.equal((await call(authorize)).status, 200, 'the sign-in page is served');
  t.equal((await tokenRequest(gateway.tokenUrl, 'm2m', { grant_type: 'client_credentials', scope: 'api1' })).status, 200);
  t.equal(await gateway.terminate(), 0, 'and stops cleanly');
});

t.test('store-kept signing keys: starts without them, answers 503, signs once the store gives them', async (t) => {
  const redisPort = await freePort();
  const gateway = await startSpawnedGateway(t, {
    validators: [],
    untilListening: true,
    patch: (raw) => {
      raw.store = { type: 'redis', url: `redis://127.0.0.1:${redisPort}` };
      // No key files: the keys are kept in the store.
      raw.signing = { algorithm: 'ES256' };
    },
  });
  t.teardown(async () => {
    await gateway.terminate();
  });
  const readyz = await call(`${gateway.url}/readyz`);
  t.equal(readyz.status, 503);
  t.match(readyz.body, /no signing keys/);
  const unsigned = await tokenRequest(gateway.tokenUrl, 'm2m', { grant_type: 'client_credentials', scope: 'api1' });
  t.equal(unsigned.status, 503, `no key to sign with yet: 503 (${unsigned.body})`);
  t.ok(Number(unsigned.retryAfter) > 0, 'with Retry-After');

  const redis = await startRedisServer({ port: redisPort });
  t.teardown(() => redis.stop());
  if (!redis.managed) {
    t.comment(redis.warning ?? 'no redis-server');
    return;
  }
  const until = Date.now() + 120_000;
  let ready = readyz;
  while (ready.status !== 200 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    ready = await call(`${gateway.url}/readyz`);
  }
  t.equal(ready.status, 200, `/readyz turns 200 once the store answers: ${ready.body}`);
  const signed = await tokenRequest(gateway.tokenUrl, 'm2m', { grant_type: 'client_credentials', scope: 'api1' });
  t.equal(signed.status, 200, 'signed with the key the store now holds');
  const jwks = JSON.parse((await call(`${gateway.url}/.well-known/openid-configuration/jwks`)).body) as { keys: { kid: string }[] };
  const kid = JSON.parse(
    Buffer.from((JSON.parse(signed.body) as { access_token: string }).access_token.split('.')[0] as string, 'base64url').toString(),
  ) as {
    kid: string;
  };
  t.ok(
    jwks.keys.some((key) => key.kid === kid.kid),
    'its key is published',
  );
  t.equal(await gateway.terminate(), 0);
});
