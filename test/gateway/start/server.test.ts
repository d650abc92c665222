import t from 'tap';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { validateConfig } from '../../../gateway/config/load.js';
import { startGateway } from '../../../gateway/start/server.js';
import { baseTestConfig, startTestGateway } from '../../helpers/test_gateway.js';
import { freePort } from '../../helpers/free_port.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';

const fixture = (name: string) => new URL(`../../fixtures/grants/${name}.ts`, import.meta.url).href;
const tokenRequest = (url: string, body: string, auth = basicAuthorization('m2m', 'secret')) =>
  fetch(`${url}/connect/token`, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
    body,
  });

function addTester(raw: Record<string, unknown>, grants: string[]) {
  (raw.clients as Record<string, unknown>[]).push({
    clientId: 'tester',
    clientSecrets: [{ value: 'K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols=' }],
    allowedGrantTypes: ['client_credentials', ...grants],
    allowedScopes: ['api1'],
  });
}

t.test('a graceful stop finishes requests in flight, then refuses new connections', async (t) => {
  const gw = await startTestGateway(t, {
    grantModules: [fixture('slow_grant')],
    extraGrantTypes: ['test_slow'],
    patch: (raw) => addTester(raw, ['test_slow']),
  });
  const inFlight = Array.from({ length: 3 }, () => tokenRequest(gw.url, 'grant_type=test_slow', basicAuthorization('tester', 'secret')));
  // In flight means handed to the workers (the slow grant holds each for 300 ms): a fixed pause
  // raced the requests' connections on a loaded machine, and a stop before they arrived reset them.
  const inFlightGauge = async (): Promise<number> => {
    const text = await (await fetch(`${gw.managementUrl}/metrics`)).text();
    return Number(/^tessera_worker_requests_in_flight (\d+)/m.exec(text)?.[1] ?? 0);
  };
  const deadline = Date.now() + 10_000;
  while ((await inFlightGauge()) < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  await gw.stop();
  const statuses = await Promise.all(inFlight.map(async (p) => (await p).status));
  t.same(statuses, [200, 200, 200]);
  await t.rejects(tokenRequest(gw.url, 'grant_type=client_credentials'), 'nothing listens after stop');
});

t.test('logs carry no client secret, token or password', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const port = await freePort();
  const raw = baseTestConfig();
  raw.issuer = `http://127.0.0.1:${port}`;
  raw.listen = { host: '127.0.0.1', port };
  raw.logLevel = 'trace';
  const dir = t.testdir({});
  const gw = await startGateway({
    config: validateConfig(raw, { configDir: dir, env: {} }),
    logger: pino({ level: 'trace' }, sink),
    devKeyDir: dir,
  });
  t.teardown(() => gw.stop());
  const ok = await tokenRequest(gw.url, 'grant_type=client_credentials');
  const token = ((await ok.json()) as { access_token: string }).access_token;
  await tokenRequest(gw.url, 'grant_type=client_credentials', basicAuthorization('m2m', 'Sup3rS3cretGuess'));
  await tokenRequest(gw.url, 'grant_type=client_credentials&client_id=m2m&client_secret=An0therGuess');
  await gw.stop();
  const log = lines.join('');
  t.ok(log.includes('tessera listening'), 'the log was captured');
  for (const secret of ['Sup3rS3cretGuess', 'An0therGuess', token, token.split('.')[2] as string]) {
    t.notOk(log.includes(secret), `the log does not contain ${secret.slice(0, 12)}…`);
  }
});

t.test('on the Redis store', async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  if (redis.warning !== null) t.comment(redis.warning);
  const keyPrefix = `t${Date.now()}:`;
  const patch = (raw: Record<string, unknown>) => {
    raw.store = { type: 'redis', url: redis.url, keyPrefix, commandTimeoutMs: 1000 };
    addTester(raw, ['test_store']);
  };
  const options = { grantModules: [fixture('store_grant')], extraGrantTypes: ['test_store'], patch };
  const [a, b] = await Promise.all([startTestGateway(t, options), startTestGateway(t, options)]);

  t.test('two gateways sharing Redis share one development key', async (t) => {
    const jwks = async (url: string) =>
      ((await (await fetch(`${url}/.well-known/openid-configuration/jwks`)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    const [ka, kb] = await Promise.all([jwks(a.url), jwks(b.url)]);
    t.equal(ka.length, 1);
    t.same(ka, kb);
  });

  t.test('issues tokens and serves a grant that reads the store', async (t) => {
    t.equal((await tokenRequest(a.url, 'grant_type=client_credentials')).status, 200);
    t.equal((await tokenRequest(b.url, 'grant_type=test_store', basicAuthorization('tester', 'secret'))).status, 200);
    t.equal((await fetch(`${a.url}/readyz`)).status, 200);
  });

  t.test('during an outage a store grant answers 503 in bounded time while client_credentials keeps working', async (t) => {
    if (!redis.managed) {
      t.comment('cannot stop a shared redis-server');
      return;
    }
    await redis.stop();
    const started = Date.now();
    const res = await tokenRequest(a.url, 'grant_type=test_store', basicAuthorization('tester', 'secret'));
    t.ok(Date.now() - started < 2000, 'answered within 2 s');
    t.equal(res.status, 503);
    t.equal(res.headers.get('retry-after'), '2');
    t.equal(res.headers.get('cache-control'), 'no-store');
    t.same(await res.json(), {
      error: 'temporarily_unavailable',
      error_description: 'The service is temporarily unavailable. Retry later.',
    });
    t.equal((await tokenRequest(a.url, 'grant_type=client_credentials')).status, 200, 'client_credentials needs no store');
    const ready = await fetch(`${a.url}/readyz`);
    t.equal(ready.status, 503);
    t.same(await ready.json(), { status: 'not_ready', problems: ['store not serving'] });

    await redis.start();
    let status = 0;
    for (let i = 0; i < 40 && status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await tokenRequest(a.url, 'grant_type=test_store', basicAuthorization('tester', 'secret'))).status;
    }
    t.equal(status, 200, 'works again after the store comes back');
  });
});
