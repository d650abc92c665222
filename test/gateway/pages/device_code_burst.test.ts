// The /device user-code throttle is atomic (docs/security.md, "Throttles"): every code is counted
// on the store's increment before it is looked up, so of a parallel burst of guesses from one
// browser and address at most `maxFailures` are looked up, on the memory store and on Redis.
// node:http sends from a chosen loopback address (fetch cannot).
import t, { type Test } from 'tap';
import { request } from 'node:http';
import { startRedisServer } from '../../helpers/redis_server.js';
import { startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';

const from = '127.0.0.6';

function send(gw: TestGateway, method: 'GET' | 'POST', cookie: string, form?: Record<string, string>) {
  const url = new URL(`${gw.url}/device`);
  const body = form === undefined ? '' : new URLSearchParams(form).toString();
  return new Promise<{ status: number; cookies: string[]; body: string }>((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method,
        localAddress: from,
        agent: false,
        headers: {
          ...(cookie === '' ? {} : { cookie }),
          ...(form === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, cookies: res.headers['set-cookie'] ?? [], body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function burst(t: Test, store: Record<string, unknown>): Promise<void> {
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      raw.store = store;
      raw.throttling = { userCode: { maxFailures: 10, windowSeconds: 60 } };
    },
  });
  const entry = await send(gw, 'GET', '');
  const cookie = (entry.cookies[0] ?? '').split(';')[0] as string;
  const token = /name="csrf_token" value="([^"]+)"/.exec(entry.body)?.[1] as string;
  t.ok(cookie.startsWith('tessera.csrf=') && token !== undefined, 'a CSRF cookie and token');
  const answers = await Promise.all(
    Array.from({ length: 60 }, (_, i) => send(gw, 'POST', cookie, { csrf_token: token, user_code: `BCDF-${'GHJKLMNP'[i % 8]}QRS` })),
  );
  const statuses = answers.map((a) => a.status);
  t.equal(statuses.filter((s) => s === 400).length, 10, 'ten guesses looked up (each a wrong code)');
  t.equal(statuses.filter((s) => s === 429).length, 50, 'every other one refused without a lookup');
}

t.test('memory store', (t) => burst(t, { type: 'memory' }));

t.test('redis store', async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  await burst(t, { type: 'redis', url: redis.url });
});
