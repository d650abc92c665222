// A gateway that is not one of `tessera start --processes N` takes its ports to itself
// (docs/operations.md, "Several gateways"): a second `tessera start` on a port in use exits 1 with
// the port named, on the Redis store too (SO_REUSEPORT, uWS's default, would have let it take half
// the connections in silence); one on a management port in use fails to start the same way. `--processes 2`
// sharing its port is test/gateway/cli/supervisor.test.ts.
import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { validateConfig } from '../../../gateway/config/load.js';
import { Listener } from '../../../gateway/http/listener.js';
import { startGateway } from '../../../gateway/start/server.js';
import { startCli } from '../../helpers/cli_process.js';
import { freePort } from '../../helpers/free_port.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { baseTestConfig, startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);

function useRedis(raw: Record<string, unknown>): void {
  raw.store = { type: 'redis', url: redis.url, keyPrefix: `port-in-use:${process.pid}:`, commandTimeoutMs: 1000 };
}

/** `tessera start` on the test config with `listen` and `management` as given; resolves its exit code and output. */
async function startSecond(t: Test, listenPort: number, managementPort: number): Promise<{ code: number | null; output: string }> {
  const dir = t.testdir();
  const raw = baseTestConfig();
  raw.issuer = `http://127.0.0.1:${listenPort}`;
  raw.listen = { host: '127.0.0.1', port: listenPort };
  raw.management = { host: '127.0.0.1', port: managementPort };
  useRedis(raw);
  writeFileSync(join(dir, 'tessera.json'), JSON.stringify(raw));
  const cli = startCli(['start', '--config', join(dir, 'tessera.json')], { cwd: dir });
  t.teardown(() => {
    cli.child.kill('SIGKILL');
  });
  const code = await Promise.race([cli.exited, new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 60_000))]);
  if (code === 'running') throw new Error(`the second gateway is still running on a port in use:\n${cli.output()}`);
  return { code, output: cli.output() };
}

async function clientCredentials(gateway: TestGateway): Promise<number> {
  const response = await fetch(gateway.tokenUrl, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from('m2m:secret').toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials&scope=api1',
  });
  return response.status;
}

t.test('a second gateway on the public port in use exits 1 naming the port (Redis store)', async (t) => {
  const first = await startTestGateway(t, { patch: useRedis });
  const second = await startSecond(t, first.port, await freePort());
  t.equal(second.code, 1, 'exit 1: it could not listen');
  t.match(
    second.output,
    `error: could not start the gateway: cannot listen on 127.0.0.1:${first.port} (listen.host, listen.port): the port is in use by another process`,
  );
  t.match(second.output, /only the processes of one "tessera start --processes N" share a port/);
  t.equal(await clientCredentials(first), 200, 'the first gateway still serves');
});

t.test('a second gateway on the management port in use fails naming it', async (t) => {
  const managementPort = await freePort();
  const first = await startTestGateway(t, {
    patch: (raw) => {
      useRedis(raw);
      raw.management = { host: '127.0.0.1', port: managementPort };
    },
  });
  // In this process (a second CLI run costs seconds): a bind is refused whichever process holds the port.
  const raw = baseTestConfig();
  const port = await freePort();
  raw.issuer = `http://127.0.0.1:${port}`;
  raw.listen = { host: '127.0.0.1', port };
  raw.management = { host: '127.0.0.1', port: managementPort };
  useRedis(raw);
  const config = validateConfig(raw, { configDir: t.testdir(), env: {} });
  await t.rejects(startGateway({ config, devKeyDir: t.testdir(), watchValidators: false }), {
    message: `cannot listen on 127.0.0.1:${managementPort} (management.host, management.port): the port is in use by another process`,
  });
  const metrics = await fetch(`${first.managementUrl}/metrics`);
  t.equal(metrics.status, 200, "the first gateway's /metrics still answers");
});

t.test('the listener names why it cannot take an address', async (t) => {
  const open = (host: string, port: number) => Listener.open({ host, port, exclusive: true, mount: () => {} });
  // Held by any process's socket, not only a gateway's.
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  t.teardown(() => holder.close());
  const held = (holder.address() as { port: number }).port;
  await t.rejects(open('127.0.0.1', held), {
    message: `cannot listen on 127.0.0.1:${held} (listen.host, listen.port): the port is in use by another process`,
  });
  // 192.0.2.1 is TEST-NET-1 (RFC 5737): never an address of this host.
  await t.rejects(open('192.0.2.1', held), {
    message: `cannot listen on 192.0.2.1:${held} (listen.host, listen.port): the address is not one of this host's`,
  });
});
