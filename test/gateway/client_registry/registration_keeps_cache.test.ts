// Dynamic client registration (RFC 7591) beside store-kept clients under load (docs/architecture.md,
// "Clients in the store"): a registration creates a client under a new random id that no gateway
// can have cached, so it leaves every gateway's cache as it was. Were each registration to empty the
// caches, as a change to an existing client must, every active client would go back to the store at
// once: 300 cached clients asking together right after it would meet the 256-lookup cap (503s), and
// a registration endpoint open to the Internet would send every gateway's client traffic to Redis.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { callbackUri } from '../../helpers/authorize_flow.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { burst, readGauge } from '../../helpers/burst.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { formPost } from '../../helpers/release_at_once.js';
import { seedStoredClients, storedClientIds, storedSecret } from '../../helpers/stored_clients.js';
import { startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';

t.setTimeout(90_000);
const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);
const keyPrefix = `registration-cache-${process.pid}:`;
const ids = storedClientIds(300);
await seedStoredClients(redis.url, keyPrefix, ids);
const initialAccessToken = 'initial-access-token-for-the-cache-test';
const tokenFile = path.join(t.testdir(), 'initial.token');
writeFileSync(tokenFile, `${initialAccessToken}\n`);

const start = (): Promise<TestGateway> =>
  startTestGateway(t, {
    patch: (raw) => {
      raw.store = { type: 'redis', url: redis.url, keyPrefix, commandTimeoutMs: 5000 };
      raw.workers = { threads: 2 };
      raw.clientRegistry = { store: true, pollIntervalMs: 100 };
      raw.dynamicClientRegistration = {
        enabled: true,
        initialAccessTokenFile: tokenFile,
        policy: {
          grantTypes: ['authorization_code', 'client_credentials'],
          scopes: ['openid', 'api1'],
          redirectUriSchemes: ['http'],
          tokenEndpointAuthMethods: ['client_secret_basic'],
        },
      };
    },
  });
const [a, b] = await Promise.all([start(), start()]);
const clientCredentials = (clientId: string, secret = storedSecret) =>
  formPost('/connect/token', { grant_type: 'client_credentials', scope: 'api1' }, { clientId, secret });

/** All 300 stored clients, in two bursts of 150 (each below the lookup cap). */
async function warm(gateway: TestGateway): Promise<void> {
  for (const half of [ids.slice(0, 150), ids.slice(150)]) {
    const outcome = await burst(
      gateway.port,
      half.map((id) => clientCredentials(id)),
    );
    if (outcome.statuses[200] !== half.length) throw new Error(`warming: ${JSON.stringify(outcome.statuses)}`);
  }
}

t.test('a registration leaves every gateway cache as it was; the registered client works at once on both', async (t) => {
  await Promise.all([warm(a), warm(b)]);
  const cachedOn = (gateway: TestGateway) => readGauge(`${gateway.managementUrl}/metrics`, 'tessera_client_registry_cached_clients');
  t.equal(await cachedOn(a), 300, 'A caches the 300 clients');
  t.equal(await cachedOn(b), 300, 'B too');
  const registered: { client_id: string; client_secret: string }[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${a.url}/connect/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${initialAccessToken}` },
      body: JSON.stringify({ redirect_uris: [callbackUri], grant_types: ['client_credentials'], scope: 'api1' }),
    });
    t.equal(res.status, 201, `registration ${i + 1}`);
    registered.push((await res.json()) as { client_id: string; client_secret: string });
  }
  // B's version polls (every 100 ms) have run since.
  await new Promise((resolve) => setTimeout(resolve, 400));
  t.equal(await cachedOn(a), 300, 'A still caches the 300 clients');
  t.equal(await cachedOn(b), 300, 'B still caches the 300 clients');
  for (const gateway of [a, b]) {
    const outcome = await burst(
      gateway.port,
      ids.map((id) => clientCredentials(id)),
    );
    t.same(outcome.statuses, { 200: 300 }, 'the 300 clients at once: all served from the cache, none refused at the lookup cap');
    for (const client of registered) {
      const res = await fetch(gateway.tokenUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: basicAuthorization(client.client_id, client.client_secret),
        },
        body: 'grant_type=client_credentials&scope=api1',
      });
      await res.arrayBuffer();
      t.equal(res.status, 200, 'a registered client gets a token at once');
    }
  }
});
