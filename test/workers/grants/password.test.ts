import t, { type Test } from 'tap';
import { decodeJwt } from 'jose';
import { sha256Secret, startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';
import { addPasswordFixtures, passwordFixtures } from '../../helpers/password_users.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';

const fixtures = await passwordFixtures();
const form = (p: Record<string, string>) => new URLSearchParams(p).toString();

async function grant(gw: TestGateway, params: Record<string, string>, client = 'ro') {
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { authorization: basicAuthorization(client), 'content-type': 'application/x-www-form-urlencoded' },
    body: form({ grant_type: 'password', ...params }),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

const wrongCredentials = '{"error":"invalid_grant","error_description":"The username or password is incorrect."}';

t.test('password grant', async (t) => {
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      addPasswordFixtures(raw, fixtures);
      raw.throttling = { password: { maxFailures: 50, windowSeconds: 60 } };
    },
  });

  t.test('issues a user token with sub, amr, idp and auth_time', async (t) => {
    const r = await grant(gw, { username: 'alice', password: 'alice-pw', scope: 'openid api1' });
    t.equal(r.status, 200, r.text);
    t.equal(r.headers.get('cache-control'), 'no-store');
    const body = JSON.parse(r.text) as { access_token: string; scope: string; refresh_token?: string };
    t.equal(body.scope, 'openid api1');
    t.equal(body.refresh_token, undefined, 'no offline_access, no refresh token');
    const claims = decodeJwt(body.access_token);
    t.equal(claims.sub, 'sub-alice');
    t.same(claims.amr, ['pwd']);
    t.equal(claims.idp, 'local');
    t.equal(claims.client_id, 'ro');
    t.equal(claims.tenant, undefined);
    t.ok(Math.abs((claims.auth_time as number) - Date.now() / 1000) < 5);
  });

  t.test('requires both username and password', async (t) => {
    const incomplete: Record<string, string>[] = [{ username: 'alice' }, { password: 'alice-pw' }, { username: '', password: 'alice-pw' }];
    for (const params of incomplete) {
      const r = await grant(gw, params);
      t.equal(r.status, 400);
      t.same(JSON.parse(r.text), { error: 'invalid_request', error_description: 'The username and password parameters are required.' });
    }
  });

  t.test('refuses a client that is not allowed the password grant', async (t) => {
    const r = await grant(gw, { username: 'alice', password: 'alice-pw' }, 'm2m');
    t.equal(r.status, 400);
    t.equal(JSON.parse(r.text).error, 'unauthorized_client');
  });

  t.test('refuses scopes the client may not have', async (t) => {
    const r = await grant(gw, { username: 'alice', password: 'alice-pw', scope: 'api2' });
    t.equal(r.status, 400);
    t.equal(JSON.parse(r.text).error, 'invalid_scope');
  });

  t.test('answers an unknown user, a wrong password, a disabled user and a tenant mismatch identically', async (t) => {
    const cases: Record<string, string>[] = [
      { username: 'nobody', password: 'alice-pw' },
      { username: 'alice', password: 'wrong' },
      { username: 'bob', password: 'bob-pw' },
      { username: 'dave', password: 'dave-pw' },
      { username: 'dave', password: 'dave-pw', acr_values: 'tenant:other' },
      { username: 'erin', password: 'erin-pw' },
    ];
    for (const params of cases) {
      const r = await grant(gw, params);
      t.equal(r.status, 400, JSON.stringify(params));
      t.equal(r.text, wrongCredentials, JSON.stringify(params));
    }
  });

  t.test('spends a password verification on unknown users too', async (t) => {
    // Interleaved, and the fastest of each kind: a loaded machine only adds time, so the fastest
    // answer is the closest to the work done, and both kinds meet the same load.
    const fastest = { unknown: Number.POSITIVE_INFINITY, wrong: Number.POSITIVE_INFINITY };
    const timed = async (params: Record<string, string>) => {
      const start = performance.now();
      await grant(gw, params);
      return performance.now() - start;
    };
    for (let i = 0; i < 5; i++) {
      fastest.unknown = Math.min(fastest.unknown, await timed({ username: 'nobody', password: 'x' }));
      fastest.wrong = Math.min(fastest.wrong, await timed({ username: 'alice', password: 'x' }));
    }
    const { unknown, wrong } = fastest;
    // An argon2id verify costs ~14 ms; a skipped one would make unknown users far faster.
    t.ok(unknown > wrong * 0.5, `unknown user ${unknown.toFixed(1)} ms vs wrong password ${wrong.toFixed(1)} ms (fastest of 5 each)`);
  });

  t.test('accepts a non-ASCII password', async (t) => {
    const r = await grant(gw, { username: 'carol', password: 'pässwörd ✓ 密码' });
    t.equal(r.status, 200, r.text);
  });

  t.test('refuses a password that is not UTF-8', async (t) => {
    const res = await fetch(gw.tokenUrl, {
      method: 'POST',
      headers: { authorization: basicAuthorization('ro'), 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=password&username=carol&password=p%E4sswort',
    });
    t.equal(res.status, 400);
    t.equal(((await res.json()) as { error: string }).error, 'invalid_request');
  });

  t.test('matches users of the tenant given in acr_values and puts the tenant in the token', async (t) => {
    const r = await grant(gw, { username: 'dave', password: 'dave-pw', acr_values: 'tenant:acme' });
    t.equal(r.status, 200, r.text);
    const claims = decodeJwt((JSON.parse(r.text) as { access_token: string }).access_token);
    t.equal(claims.sub, 'sub-dave-acme');
    t.equal(claims.tenant, 'acme');
    t.equal(claims.idp, 'local');
  });

  t.test('matches users of the identity provider given in acr_values', async (t) => {
    const r = await grant(gw, { username: 'erin', password: 'erin-pw', acr_values: 'urn:mace:incommon:iap:silver idp:corp' });
    t.equal(r.status, 200, r.text);
    const claims = decodeJwt((JSON.parse(r.text) as { access_token: string }).access_token);
    t.equal(claims.sub, 'sub-erin-corp');
    t.equal(claims.idp, 'corp');
  });

  t.test('refuses an identity provider outside the client restrictions', async (t) => {
    for (const acr of [undefined, 'idp:local', 'idp:other']) {
      const r = await grant(gw, { username: 'erin', password: 'erin-pw', ...(acr ? { acr_values: acr } : {}) }, 'corp-only');
      t.equal(r.status, 400, String(acr));
      t.same(JSON.parse(r.text), {
        error: 'invalid_request',
        error_description: 'The requested identity provider is not allowed for this client.',
      });
    }
    const ok = await grant(gw, { username: 'erin', password: 'erin-pw', acr_values: 'idp:corp' }, 'corp-only');
    t.equal(ok.status, 200, ok.text);
  });
});

async function throttleSuite(t: Test, store: 'memory' | 'redis') {
  let redisUrl: string | undefined;
  if (store === 'redis') {
    const redis = await startRedisServer();
    t.teardown(() => redis.stop());
    redisUrl = redis.url;
  }
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      addPasswordFixtures(raw, fixtures);
      raw.throttling = {
        password: { maxFailures: 3, windowSeconds: 2 },
        passwordPerUser: { maxFailures: 5, windowSeconds: 2 },
        clientAuthentication: { maxFailures: 4, windowSeconds: 2 },
        introspectionInactive: { maxFailures: 6, windowSeconds: 2 },
      };
      if (redisUrl !== undefined) raw.store = { type: 'redis', url: redisUrl };
      raw.apiResources = [{ name: 'urn:api1', scopes: ['api1'], secrets: [{ value: sha256Secret('api-secret') }] }];
    },
  });

  t.test('blocks a username at a client after maxFailures failures with 429 and Retry-After', async (t) => {
    for (let i = 0; i < 3; i++) t.equal((await grant(gw, { username: 'alice', password: 'nope' })).status, 400, `failure ${i + 1}`);
    const blocked = await grant(gw, { username: 'alice', password: 'alice-pw' });
    t.equal(blocked.status, 429, 'even the right password is refused while blocked');
    t.same(JSON.parse(blocked.text), { error: 'temporarily_unavailable', error_description: 'Too many failed attempts. Retry later.' });
    const retryAfter = Number(blocked.headers.get('retry-after'));
    t.ok(retryAfter >= 1 && retryAfter <= 2, `Retry-After ${retryAfter}`);
    t.equal(blocked.headers.get('cache-control'), 'no-store');

    t.equal((await grant(gw, { username: 'carol', password: 'pässwörd ✓ 密码' })).status, 200, 'other users are unaffected');
    t.equal(
      (await grant(gw, { username: 'alice', password: 'alice-pw' }, 'ro2')).status,
      200,
      'the same user at another client is unaffected',
    );

    await new Promise((r) => setTimeout(r, 2100));
    t.equal((await grant(gw, { username: 'alice', password: 'alice-pw' })).status, 200, 'the block ends with the window');
  });

  t.test('failures count per username across clients too, for known and unknown names alike', async (t) => {
    // dave (tenant acme) exists; nobody-here does not. Each gets 2 failures at ro and 3 at ro2:
    // under the per-client limit (3) at each, but 5 across clients, the per-user limit.
    for (const username of ['dave', 'nobody-here']) {
      const attempt = (password: string, client: string) => grant(gw, { username, password, acr_values: 'tenant:acme' }, client);
      const statuses: number[] = [];
      for (let i = 0; i < 2; i++) statuses.push((await attempt('nope', 'ro')).status);
      for (let i = 0; i < 3; i++) statuses.push((await attempt('nope', 'ro2')).status);
      t.same(statuses, [400, 400, 400, 400, 400], `${username}: five wrong passwords answered as wrong`);
      const third = await attempt(username === 'dave' ? 'dave-pw' : 'nope', 'ro');
      t.equal(third.status, 429, `${username}: a third client-side attempt at ro is refused: the user is blocked across clients`);
      t.same(JSON.parse(third.text), { error: 'temporarily_unavailable', error_description: 'Too many failed attempts. Retry later.' });
      t.ok(Number(third.headers.get('retry-after')) >= 1, `${username}: Retry-After`);
    }
    await new Promise((r) => setTimeout(r, 2100));
    t.equal(
      (await grant(gw, { username: 'dave', password: 'dave-pw', acr_values: 'tenant:acme' }, 'ro2')).status,
      200,
      'the block ends with the window',
    );
  });

  t.test('an introspection caller scanning inactive tokens is stopped; valid tokens of another caller are not', async (t) => {
    const introspect = async (client: string, secret: string, token: string) => {
      const res = await fetch(`${gw.url}/connect/introspect`, {
        method: 'POST',
        headers: { authorization: basicAuthorization(client, secret), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token }).toString(),
      });
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.text() };
    };
    const issued = await grant(gw, { username: 'carol', password: 'pässwörd ✓ 密码', scope: 'api1' }, 'ro2');
    const accessToken = (JSON.parse(issued.text) as { access_token: string }).access_token;
    t.match((await introspect('urn:api1', 'api-secret', accessToken)).body, /^\{"active":true/, 'a valid token is active');

    // The scanner: the client ro introspecting random tokens. Six inactive answers are given.
    const scans: string[] = [];
    for (let i = 0; i < 6; i++) scans.push((await introspect('ro', 'secret', `guess-${i}-${Math.random()}`)).body);
    t.same(new Set(scans), new Set(['{"active":false}']), 'the first six inactive answers are given');
    const blocked = await introspect('ro', 'secret', `guess-7-${Math.random()}`);
    t.equal(blocked.status, 429, 'the seventh is refused');
    t.equal(
      blocked.body,
      '{"error":"temporarily_unavailable","error_description":"Too many introspections of inactive tokens. Retry later."}',
    );
    t.ok(Number(blocked.retryAfter) >= 1, 'with Retry-After');
    t.match(
      (await introspect('urn:api1', 'api-secret', accessToken)).body,
      /^\{"active":true/,
      'another caller with a valid token is unaffected',
    );
    // Valid tokens do not clear the count: the API itself stays under its own limit.
    for (let i = 0; i < 5; i++) t.equal((await introspect('urn:api1', 'api-secret', `miss-${i}`)).body, '{"active":false}');
    t.match((await introspect('urn:api1', 'api-secret', accessToken)).body, /^\{"active":true/);
    await new Promise((r) => setTimeout(r, 2100));
    t.equal((await introspect('ro', 'secret', 'after-the-window')).body, '{"active":false}', 'the block ends with the window');
  });

  t.test('a parallel burst of guesses gets at most the limit evaluated, the right password included', async (t) => {
    // erin (idp corp) is used by no other subtest. 59 wrong guesses and the right password, at once.
    const guesses = Array.from({ length: 60 }, (_, i) => (i === 30 ? 'erin-pw' : `guess-${i}`));
    const answers = await Promise.all(guesses.map((password) => grant(gw, { username: 'erin', password, acr_values: 'idp:corp' })));
    const evaluated = answers.filter((a) => a.status === 400 || a.status === 200);
    t.ok(evaluated.length <= 3, `${evaluated.length} of 60 evaluated (limit 3 per client)`);
    t.equal(answers.filter((a) => a.status === 429).length, 60 - evaluated.length, 'every other attempt is refused unevaluated');
    t.equal((await grant(gw, { username: 'erin', password: 'erin-pw', acr_values: 'idp:corp' })).status, 429, 'blocked after the burst');
    await new Promise((r) => setTimeout(r, 2100));
  });

  t.test('a success resets the count', async (t) => {
    for (let i = 0; i < 2; i++) t.equal((await grant(gw, { username: 'carol', password: 'nope' }, 'ro2')).status, 400);
    t.equal((await grant(gw, { username: 'carol', password: 'pässwörd ✓ 密码' }, 'ro2')).status, 200);
    for (let i = 0; i < 2; i++) t.equal((await grant(gw, { username: 'carol', password: 'nope' }, 'ro2')).status, 400);
    t.equal(
      (await grant(gw, { username: 'carol', password: 'pässwörd ✓ 密码' }, 'ro2')).status,
      200,
      'two failures after a reset do not block',
    );
  });

  t.test('blocks a client after repeated authentication failures, and no other client', async (t) => {
    const tryClient = async (secret: string) => {
      const res = await fetch(gw.tokenUrl, {
        method: 'POST',
        headers: { authorization: basicAuthorization('ro2', secret), 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=password&username=alice&password=alice-pw',
      });
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.text() };
    };
    for (let i = 0; i < 4; i++) t.equal((await tryClient('wrong')).status, 401, `failure ${i + 1}`);
    await new Promise((r) => setTimeout(r, 50));
    const blocked = await tryClient('secret');
    t.equal(blocked.status, 429, 'the right secret is refused while blocked');
    t.equal(blocked.body, '{"error":"temporarily_unavailable","error_description":"Too many failed attempts. Retry later."}');
    t.ok(Number(blocked.retryAfter) >= 1);
    t.equal((await grant(gw, { username: 'carol', password: 'pässwörd ✓ 密码' }, 'ro')).status, 200, 'other clients are unaffected');
    await new Promise((r) => setTimeout(r, 2100));
    t.equal((await tryClient('secret')).status, 200, 'the block ends with the window');
  });
  t.test('blocks an API resource at introspection after repeated wrong secrets', async (t) => {
    const introspect = async (secret: string) => {
      const res = await fetch(`${gw.url}/connect/introspect`, {
        method: 'POST',
        headers: { authorization: basicAuthorization('urn:api1', secret), 'content-type': 'application/x-www-form-urlencoded' },
        body: 'token=x',
      });
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.text() };
    };
    const ok = await introspect('api-secret');
    t.equal(ok.body, '{"active":false}', `the right secret works: ${ok.status} ${ok.body}`);
    for (let i = 0; i < 4; i++) t.equal((await introspect('wrong')).status, 401, `failure ${i + 1}`);
    await new Promise((r) => setTimeout(r, 50));
    const blocked = await introspect('api-secret');
    t.equal(blocked.status, 429, 'the right secret is refused while blocked');
    t.equal(blocked.body, '{"error":"temporarily_unavailable","error_description":"Too many failed attempts. Retry later."}');
    t.ok(Number(blocked.retryAfter) >= 1);
  });
}

// The two stores' suites share nothing (a gateway and throttle state each, the Redis suite its own
// redis-server) and spend most of their time waiting out 2 s windows: run side by side, the file
// takes the longer suite's time instead of their sum.
t.test('throttling', { jobs: 2 }, async (t) => {
  t.test('on the memory store', (t) => throttleSuite(t, 'memory'));
  t.test('on the Redis store', (t) => throttleSuite(t, 'redis'));
});
