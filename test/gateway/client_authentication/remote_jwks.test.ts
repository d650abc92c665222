import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { pino } from 'pino';
import { RemoteJwks } from '../../../gateway/client_authentication/remote_jwks.js';
import type { PublicJwkConfig } from '../../../core/worker_config.js';

const ec = (kid: string) => ({ kty: 'EC', crv: 'P-256', x: 'x', y: 'y', kid });

/** A jwksUri whose answer the test sets, counting requests. */
async function server(t: Test) {
  const state = { status: 200, body: JSON.stringify({ keys: [ec('a')] }), requests: 0 };
  const http = createServer((_req, res) => {
    state.requests++;
    res.statusCode = state.status;
    res.end(state.body);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    // fetch keeps connections alive: close them, or close() waits for their idle timeout.
    http.closeAllConnections();
    return new Promise<void>((resolve) => http.close(() => resolve()));
  });
  return { state, url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/jwks` };
}

const all = (keys: readonly PublicJwkConfig[]) => [...keys];
const kids = (keys: PublicJwkConfig[]) => keys.map((k) => k.kid);

t.test('RemoteJwks', async (t) => {
  const { state, url } = await server(t);
  let now = 1_000_000;
  const jwks = () =>
    new RemoteJwks(url, 'c', { cacheMs: 60_000, cooldownMs: 10_000, timeoutMs: 500, logger: pino({ level: 'silent' }), now: () => now });

  t.test('concurrent requests share one fetch; then the cache answers synchronously', async (t) => {
    state.requests = 0;
    const remote = jwks();
    const [a, b] = await Promise.all([remote.select(all), remote.select(all)]);
    t.same(kids(a), ['a']);
    t.same(kids(b), ['a']);
    t.equal(state.requests, 1);
    const cached = remote.select(all);
    t.ok(Array.isArray(cached), 'no promise: no fetch');
  });

  t.test('keys past cacheMs are fetched again even within the cooldown of an unknown-kid fetch', async (t) => {
    state.requests = 0;
    const remote = jwks();
    await remote.select(all);
    now += 60_000;
    t.type(remote.select(all), Promise);
    await remote.select(all);
    t.equal(state.requests, 2);
    now += 1;
  });

  t.test('a failed fetch yields no keys and is not retried within the cooldown', async (t) => {
    state.requests = 0;
    state.status = 500;
    const remote = jwks();
    t.same(await remote.select(all), []);
    state.status = 200;
    t.same(remote.select(all), [], 'refused at once, without a fetch');
    t.equal(state.requests, 1);
    now += 10_000;
    t.same(kids(await remote.select(all)), ['a'], 'after the cooldown it fetches again');
  });

  t.test('private, symmetric and unknown key types are dropped; a body over 256 KiB fails', async (t) => {
    state.body = JSON.stringify({ keys: [ec('a'), { ...ec('p'), d: 'secret' }, { kty: 'oct', k: 'c2VjcmV0', kid: 'o' }, { kty: 'XYZ' }] });
    t.same(kids(await jwks().select(all)), ['a']);
    state.body = JSON.stringify({ keys: [ec('a')], padding: 'x'.repeat(300 * 1024) });
    t.same(await jwks().select(all), []);
    state.body = '{"not":"a key set"}';
    t.same(await jwks().select(all), []);
    state.body = JSON.stringify({ keys: [ec('a')] });
  });
});
