// Device authorization is rate-limited per client and source address (docs/configuration.md,
// `throttling.deviceAuthorization`): a public client needs no secret, and every answer writes
// records that live for the code's lifetime. The count and the decision are one store command,
// so a parallel burst gets exactly the limit through, on either store.
import t, { type Test } from 'tap';
import { startTestGateway, sha256Secret, type TestGateway } from '../../helpers/test_gateway.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';

const deviceGrant = 'urn:ietf:params:oauth:grant-type:device_code';

async function authorize(gw: TestGateway, clientId: string): Promise<{ status: number; retryAfter: string | null; body: string }> {
  const confidential = clientId === 'console';
  const res = await fetch(`${gw.url}/connect/deviceauthorization`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(confidential ? { authorization: basicAuthorization('console', 'console-secret') } : {}),
    },
    body: new URLSearchParams(confidential ? { scope: 'api1' } : { client_id: clientId, scope: 'api1' }).toString(),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.text() };
}

async function burst(t: Test, store: Record<string, unknown>): Promise<void> {
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      raw.store = store;
      raw.throttling = { deviceAuthorization: { maxRequests: 10, windowSeconds: 2 } };
      (raw.clients as unknown[]).push(
        { clientId: 'tv', requireClientSecret: false, allowedGrantTypes: [deviceGrant], allowedScopes: ['api1'] },
        {
          clientId: 'console',
          clientSecrets: [{ value: sha256Secret('console-secret') }],
          allowedGrantTypes: [deviceGrant],
          allowedScopes: ['api1'],
        },
      );
    },
  });

  const answers = await Promise.all(Array.from({ length: 60 }, () => authorize(gw, 'tv')));
  const granted = answers.filter((a) => a.status === 200);
  const refused = answers.filter((a) => a.status === 429);
  t.equal(granted.length, 10, 'exactly the limit of a parallel burst of 60 gets device codes');
  t.equal(refused.length, 50, 'every other request is refused');
  t.ok(
    granted.every((a) => (JSON.parse(a.body) as { device_code?: unknown }).device_code !== undefined),
    'the granted ones carry device codes',
  );
  t.same(
    new Set(refused.map((a) => a.body)),
    new Set(['{"error":"temporarily_unavailable","error_description":"Too many device authorization requests. Retry later."}']),
  );
  t.ok(
    refused.every((a) => Number(a.retryAfter) >= 1 && Number(a.retryAfter) <= 2),
    'with Retry-After within the window',
  );

  t.equal((await authorize(gw, 'console')).status, 200, 'another client from the same address is unaffected');
  await new Promise((resolve) => setTimeout(resolve, 2100));
  t.equal((await authorize(gw, 'tv')).status, 200, 'the next window lets the client in again');
}

t.test('memory store', (t) => burst(t, { type: 'memory' }));

t.test('redis store', async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  await burst(t, { type: 'redis', url: redis.url });
});

t.test('a flood of device authorizations on the memory store stays under store.maxRecords', async (t) => {
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      raw.store = { type: 'memory', maxRecords: 100 };
      raw.throttling = { deviceAuthorization: { maxRequests: 100_000, windowSeconds: 60 } };
      (raw.clients as unknown[]).push({
        clientId: 'tv',
        requireClientSecret: false,
        allowedGrantTypes: [deviceGrant],
        allowedScopes: ['api1'],
      });
    },
  });
  const codes: string[] = [];
  for (let round = 0; round < 6; round++) {
    const answers = await Promise.all(Array.from({ length: 50 }, () => authorize(gw, 'tv')));
    t.ok(
      answers.every((a) => a.status === 200),
      `round ${round + 1}: every authorization answered`,
    );
    for (const a of answers) codes.push((JSON.parse(a.body) as { device_code: string }).device_code);
  }
  const metrics = await (await fetch(`${gw.managementUrl}/metrics`)).text();
  const records = Number(/^tessera_memory_store_records (\d+)$/m.exec(metrics)?.[1]);
  const evicted = Number(/^tessera_memory_store_evicted_records (\d+)$/m.exec(metrics)?.[1]);
  t.ok(records <= 100, `${records} records held after 300 authorizations`);
  t.ok(evicted >= 400, `${evicted} device records dropped, oldest first`);
  const poll = async (deviceCode: string) => {
    const res = await fetch(gw.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: deviceGrant, device_code: deviceCode, client_id: 'tv' }).toString(),
    });
    return ((await res.json()) as { error?: string }).error;
  };
  t.equal(await poll(codes.at(-1) as string), 'authorization_pending', 'the newest code is still pending');
  t.not(await poll(codes[0] as string), 'authorization_pending', 'the oldest was dropped');
});
