// Readiness, drain and port ownership (docs/operations.md, "Health and readiness" and "Signals and
// shutdown"): `/readyz` is 200 only while the store takes writes and no stop has begun; a graceful
// stop keeps serving through its drain window; a memory-store gateway owns its port.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { validateConfig } from '../../../gateway/config/load.js';
import { startGateway } from '../../../gateway/start/server.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { baseTestConfig, startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';
import { sendRedisCommand, startRedisServer } from '../../helpers/redis_server.js';

interface Readiness {
  status: number;
  problems: string[];
}

async function readiness(url: string): Promise<Readiness> {
  const response = await fetch(`${url}/readyz`);
  const body = (await response.json()) as { status: string; problems?: string[] };
  return { status: response.status, problems: body.problems ?? [] };
}

async function clientCredentials(gateway: TestGateway): Promise<number> {
  const response = await fetch(gateway.tokenUrl, {
    method: 'POST',
    headers: { authorization: basicAuthorization('m2m'), 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&scope=api1',
  });
  await response.arrayBuffer();
  return response.status;
}

/** Polls until `check` holds or `timeoutMs` passes; returns whether it held. */
async function eventually(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

t.test('/readyz is 503 while Redis pauses writes (a failover), /healthz stays 200', async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  // The probe's write times out well inside the 4 s pause below, and not on a merely busy machine.
  const gateway = await startTestGateway(t, {
    patch: (raw) => {
      raw.store = { type: 'redis', url: redis.url, commandTimeoutMs: 1000 };
    },
  });
  t.same(await readiness(gateway.url), { status: 200, problems: [] }, 'ready on a healthy Redis');

  // What Redis's own FAILOVER and a replica promotion do: reads go on, writes wait.
  t.match(await sendRedisCommand(redis.port, 'CLIENT PAUSE 4000 WRITE'), /^\+OK/);
  const paused = await readiness(gateway.url);
  t.equal(paused.status, 503, 'not ready: the store takes no writes');
  t.same(paused.problems, ['store not serving']);
  const health = await fetch(`${gateway.url}/healthz`);
  t.equal(health.status, 200, 'liveness does not depend on the store');

  t.match(await sendRedisCommand(redis.port, 'CLIENT UNPAUSE'), /^\+OK/);
  t.ok(await eventually(async () => (await readiness(gateway.url)).status === 200, 5000), 'ready again once writes resume');
});

t.test('/readyz is 503 on a Redis Cluster whose state is fail', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tessera-cluster-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // One master holding every slot is a real cluster; taking a slot away makes its state `fail`
  // (cluster-require-full-coverage, the default), as a lost master without a replica does.
  const redis = await startRedisServer({
    args: [
      '--cluster-enabled',
      'yes',
      '--cluster-announce-ip',
      '127.0.0.1',
      '--cluster-config-file',
      path.join(dir, 'nodes.conf'),
      '--dir',
      dir,
    ],
  });
  t.teardown(() => redis.stop());
  t.match(await sendRedisCommand(redis.port, 'CLUSTER ADDSLOTSRANGE 0 16383'), /^\+OK/);
  t.ok(await eventually(async () => ((await sendRedisCommand(redis.port, 'CLUSTER INFO')) ?? '').includes('cluster_state:ok'), 10_000));

  const gateway = await startTestGateway(t, {
    patch: (raw) => {
      raw.store = { type: 'redis-cluster', nodes: [redis.url], commandTimeoutMs: 1000 };
    },
  });
  t.same(await readiness(gateway.url), { status: 200, problems: [] }, 'ready while the cluster is ok');
  t.equal(await clientCredentials(gateway), 200);

  t.match(await sendRedisCommand(redis.port, 'CLUSTER DELSLOTS 16383'), /^\+OK/);
  t.ok(await eventually(async () => ((await sendRedisCommand(redis.port, 'CLUSTER INFO')) ?? '').includes('cluster_state:fail'), 10_000));
  t.ok(await sendRedisCommand(redis.port, 'PING'), 'the node still answers PING: a ping-only check would say ready');
  const failed = await readiness(gateway.url);
  t.equal(failed.status, 503);
  t.same(failed.problems, ['store not serving']);
});

t.test('a graceful stop fails readiness at once and serves through its drain window', async (t) => {
  const gateway = await startTestGateway(t);
  t.same(await readiness(gateway.url), { status: 200, problems: [] });

  const started = Date.now();
  const stopped = gateway.stop({ drainSeconds: 2 });
  const draining = await readiness(gateway.url);
  t.equal(draining.status, 503, 'a load balancer sees not-ready as soon as the stop begins');
  t.same(draining.problems, ['draining']);
  t.equal(await clientCredentials(gateway), 200, 'requests are still served while draining');
  await stopped;
  t.ok(Date.now() - started >= 1900, 'the listener stayed open for the drain window');
  await t.rejects(fetch(`${gateway.url}/healthz`), 'the listener is closed after the drain');
});

t.test('stop() without a drain window closes the listener at once', async (t) => {
  const gateway = await startTestGateway(t);
  const started = Date.now();
  await gateway.stop();
  t.ok(Date.now() - started < 1900, 'no drain window unless one is asked for');
  await t.rejects(fetch(`${gateway.url}/healthz`));
});

t.test('a second gateway on the memory store cannot share the port', async (t) => {
  const first = await startTestGateway(t);
  const raw = baseTestConfig();
  raw.issuer = first.url;
  raw.listen = { host: '127.0.0.1', port: first.port };
  const devKeyDir = mkdtempSync(path.join(tmpdir(), 'tessera-test-'));
  t.teardown(() => rmSync(devKeyDir, { recursive: true, force: true }));
  const config = validateConfig(raw, { configDir: devKeyDir, env: {} });
  await t.rejects(startGateway({ config, devKeyDir }), {
    message: `cannot listen on 127.0.0.1:${first.port} (listen.host, listen.port): the port is in use by another process`,
  });
  t.equal(await clientCredentials(first), 200, 'the first gateway still serves');
});

t.test('the shutdown settings have defaults and are validated', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tessera-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const defaults = validateConfig(baseTestConfig(), { configDir: dir, env: {} });
  t.same(defaults.shutdown, { drainSeconds: 5, requestTimeoutSeconds: 10 });
  const raw = baseTestConfig();
  raw.shutdown = { drainSeconds: -1 };
  let problems: unknown;
  try {
    validateConfig(raw, { configDir: dir, env: {} });
  } catch (err) {
    problems = (err as { problems?: unknown }).problems;
  }
  t.match(problems, [{ path: 'shutdown.drainSeconds' }], 'a negative drain window is refused, named by its path');
});
