// `tessera start` under keep-alive load through the client registry (docs/operations.md, "Signals
// and shutdown", "Reload"; docs/architecture.md, "Clients in the store"): 40 connections of
// client_credentials and pushed authorization requests (RFC 9126) by 60 store-kept clients on a
// real Redis, more than the registry caches, so store lookups run throughout. SIGHUP (a new worker pool beside the old): every
// request answered, each 200 or 201. SIGTERM: every request that arrived answered, each 200 or 201,
// exit 0 within the bound. signals_under_load.test.ts does the same with a config file client.
import t from 'tap';
import { callbackUri } from '../../helpers/authorize_flow.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { startKeepAliveLoad, type KeepAliveLoad } from '../../helpers/keep_alive_load.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { startSpawnedGateway } from '../../helpers/spawned_gateway.js';
import { seedStoredClients, storedClientIds, storedSecret } from '../../helpers/stored_clients.js';

const connections = 40;
t.setTimeout(180_000);
const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);
const keyPrefix = `signals-stored-${process.pid}:`;
const ids = storedClientIds(60);
await seedStoredClients(redis.url, keyPrefix, ids);

const patch =
  (extra: (raw: Record<string, unknown>) => void) =>
  (raw: Record<string, unknown>): void => {
    raw.workers = { threads: 2 };
    raw.store = { type: 'redis', url: redis.url, keyPrefix, commandTimeoutMs: 2000 };
    // Fewer than the clients asked for: lookups keep running while the signals come.
    raw.clientRegistry = { store: true, cacheSize: 20 };
    extra(raw);
  };

const parBody = new URLSearchParams({
  response_type: 'code',
  redirect_uri: callbackUri,
  scope: 'openid',
  code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGjSstw-cM',
  code_challenge_method: 'S256',
}).toString();
const ccBody = 'grant_type=client_credentials&scope=api1';

/** Connection `i`'s next request: PAR on even connections, client_credentials on odd, over the stored clients. */
function storedClientRequests(port: number): (connection: number) => string {
  const sent = new Array<number>(connections).fill(0);
  return (connection) => {
    const n = sent[connection] ?? 0;
    sent[connection] = n + 1;
    const id = ids[(connection * 7 + n) % ids.length] as string;
    const [path, body] = connection % 2 === 0 ? ['/connect/par', parBody] : ['/connect/token', ccBody];
    return (
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: ${basicAuthorization(id, storedSecret)}\r\n` +
      `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`
    );
  };
}

function summary(load: KeepAliveLoad): string {
  return JSON.stringify({
    sent: load.sent,
    answered: load.answered,
    lost: load.lost,
    lostHow: [...new Set(load.lostHow)],
    statuses: Object.fromEntries(load.statuses),
    refused: load.refused,
  });
}

async function waitFor(what: string, condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const servedOnly = (load: KeepAliveLoad): number[] => [...load.statuses.keys()].filter((status) => status !== 200 && status !== 201);

t.test('SIGHUP under keep-alive load of store-kept clients and PAR: a reload, every request answered 200 or 201', async (t) => {
  const gateway = await startSpawnedGateway(t, { validators: [], patch: patch(() => {}) });
  const port = Number(new URL(gateway.url).port);
  const load = startKeepAliveLoad({ port, connections, request: storedClientRequests(port) });
  await waitFor('the load to run', () => load.answered >= 200, 30_000);
  const before = load.answered;
  gateway.signal('SIGHUP');
  // A reload boots a new pool (each thread loads tsx): seconds on a loaded machine.
  await waitFor('the reload', () => gateway.logLines().some((line) => line.msg === 'config reloaded'), 60_000);
  await waitFor('answers after the reload', () => load.answered >= before + 200, 30_000);
  await load.stop();
  t.comment(summary(load));
  t.equal(load.lost, 0, `no request lost with its connection: ${summary(load)}`);
  t.equal(load.answered, load.sent, 'every request sent was answered');
  t.same(servedOnly(load), [], `every answer 200 or 201: ${summary(load)}`);
  t.ok((load.statuses.get(201) ?? 0) > 0 && (load.statuses.get(200) ?? 0) > 0, 'both PAR and tokens served');
  const metrics = await (await fetch(`${gateway.managementUrl}/metrics`)).text();
  t.match(metrics, /^tessera_client_registry_lookups_in_flight 0$/m, 'no store lookup left in flight');
  t.equal(await gateway.terminate(), 0);
});

t.test(
  'SIGTERM under keep-alive load of store-kept clients and PAR: every request answered 200 or 201, exit within the bound',
  async (t) => {
    const drainSeconds = 2;
    const requestTimeoutSeconds = 5;
    const gateway = await startSpawnedGateway(t, {
      validators: [],
      patch: patch((raw) => {
        raw.shutdown = { drainSeconds, requestTimeoutSeconds };
      }),
    });
    const port = Number(new URL(gateway.url).port);
    let routedHere = true;
    const load = startKeepAliveLoad({ port, connections, request: storedClientRequests(port), reconnect: () => routedHere });
    await waitFor('the load to run', () => load.answered >= 200, 30_000);
    const signalled = Date.now();
    const exited = gateway.terminate();
    await waitFor(
      '/readyz to fail',
      async () => {
        const response = await fetch(`${gateway.url}/readyz`).catch(() => undefined);
        await response?.arrayBuffer();
        return response?.status === 503;
      },
      10_000,
    );
    routedHere = false;
    const code = await exited;
    const elapsed = Date.now() - signalled;
    await load.ended;
    t.comment(`exit after ${elapsed} ms: ${summary(load)}`);
    t.equal(code, 0, 'exit 0 after a graceful stop');
    t.equal(load.lost, 0, `no request lost with its connection: ${summary(load)}`);
    t.equal(load.answered, load.sent, 'every request sent was answered');
    t.same(servedOnly(load), [], `every answer 200 or 201: ${summary(load)}`);
    t.ok(load.closing >= connections, 'each connection was told to close');
    t.ok(elapsed < (drainSeconds + requestTimeoutSeconds + 2) * 1000, `exited within the bound (${elapsed} ms)`);
    t.notOk(/unanswered/.test(gateway.output()), 'no request left unanswered at the stop');
  },
);
