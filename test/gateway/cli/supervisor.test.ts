// `tessera start --processes N` (docs/operations.md, "Several processes"): N gateways on one port
// sharing one redis-server, started, restarted and stopped by a supervisor. The races of
// docs/storage.md "Guarantees" are run against both processes at once: 50 sockets, each a fresh
// connection the kernel hands to either process (SO_REUSEPORT), release their request together.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { validateConfig } from '../../../gateway/config/load.js';
import { generateSigningKey } from '../../../gateway/keys/key_loader.js';
import { startGateway } from '../../../gateway/start/server.js';
import { AuthorizeFlow, callbackUri, codeFlowClient, pkcePair } from '../../helpers/authorize_flow.js';
import { startCli, type CliProcess } from '../../helpers/cli_process.js';
import { freePort, freePortRun } from '../../helpers/free_port.js';
import { addPasswordFixtures, offlineUserClient, passwordFixtures } from '../../helpers/password_users.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { formPost, releaseAtOnce } from '../../helpers/release_at_once.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { baseTestConfig } from '../../helpers/test_gateway.js';

const invalidRefreshBody = '{"error":"invalid_grant","error_description":"The refresh token is invalid, expired or revoked."}';
const invalidCodeBody = '{"error":"invalid_grant","error_description":"The authorization code is invalid, expired or already used."}';

interface LogLine {
  msg: string;
  pid: number;
  process?: number;
  supervisor?: boolean;
  [member: string]: unknown;
}

function logLines(cli: CliProcess): LogLine[] {
  return cli
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

async function waitFor<T>(what: string, cli: CliProcess, find: (lines: LogLine[]) => T | undefined, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const found = find(logLines(cli));
    if (found !== undefined) return found;
    if (Date.now() > end || cli.child.exitCode !== null) throw new Error(`${what} did not happen:\n${cli.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The sum of `tessera_http_requests_total` on one /metrics page, with the `process` label it carries. */
async function requestsCounted(managementUrl: string): Promise<{ total: number; labels: string[] }> {
  const text = await (await fetch(`${managementUrl}/metrics`)).text();
  const lines = text.split('\n').filter((line) => line.startsWith('tessera_http_requests_total{'));
  return {
    total: lines.reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0),
    labels: [...new Set(lines.map((line) => /process="(\d+)"/.exec(line)?.[1] ?? 'none'))],
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

t.test('refuses several processes on the memory store: each would have its own state (exit 2)', async (t) => {
  const dir = t.testdir();
  const raw = baseTestConfig();
  writeFileSync(join(dir, 'tessera.json'), JSON.stringify(raw));
  const cli = startCli(['start', '--config', join(dir, 'tessera.json'), '--processes', '2'], { cwd: dir });
  t.equal(await cli.exited, 2);
  t.match(cli.output(), /processes: 2 processes need the Redis store: on the memory store each process would have its own state/);
});

t.test('two processes on one port, sharing Redis', async (t) => {
  const fixtures = await passwordFixtures();
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  if (redis.warning) t.comment(redis.warning);

  const dir = t.testdir();
  const port = await freePort();
  // Process i listens on managementPort + i.
  const managementPort = await freePortRun(2);
  const raw = baseTestConfig();
  raw.issuer = `http://127.0.0.1:${port}`;
  raw.listen = { host: '127.0.0.1', port };
  raw.management = { host: '127.0.0.1', port: managementPort };
  raw.store = { type: 'redis', url: redis.url, commandTimeoutMs: 1000 };
  raw.logLevel = 'info';
  raw.shutdown = { drainSeconds: 0, requestTimeoutSeconds: 5 };
  addPasswordFixtures(raw, fixtures);
  (raw.clients as unknown[]).push(offlineUserClient('app-strict', { refreshTokenReuseGraceSeconds: 0 }), codeFlowClient('web'));
  // One key for both processes: the development key would be written beside the working folder.
  const key = await generateSigningKey('ES256');
  writeFileSync(join(dir, 'signing.jwk.json'), JSON.stringify(key.jwk));
  raw.signing = { algorithm: 'ES256', keys: [{ file: join(dir, 'signing.jwk.json') }] };
  writeFileSync(join(dir, 'tessera.json'), JSON.stringify(raw));

  const cli = startCli(['start', '--config', join(dir, 'tessera.json'), '--processes', '2'], { cwd: dir });
  t.teardown(() => {
    cli.child.kill('SIGKILL');
  });
  const url = `http://127.0.0.1:${port}`;
  const children = await waitFor('both processes listening', cli, (lines) => {
    const listening = lines.filter((line) => line.msg === 'tessera listening' && line.supervisor !== true);
    return listening.length === 2 ? listening : undefined;
  });
  await cli.ready(url);

  t.test('says how many processes in its banner and its listening lines', async (t) => {
    t.match(cli.output(), /processes {2}2 \(pids \d+, \d+\), one port/);
    t.same(children.map((line) => line.processes).sort(), [2, 2]);
    t.same(children.map((line) => line.process).sort(), [0, 1]);
    t.same(children.map((line) => line.metrics).sort(), [
      `http://127.0.0.1:${managementPort}/metrics`,
      `http://127.0.0.1:${managementPort + 1}/metrics`,
    ]);
  });

  t.test('fresh connections reach both; each serves its own /metrics on management.port + index, labelled', async (t) => {
    const answers = await releaseAtOnce(
      Array.from({ length: 40 }, () => port),
      formPost('/connect/token', { grant_type: 'client_credentials' }, { clientId: 'm2m', secret: 'secret' }),
    );
    t.same([...new Set(answers.map((a) => a.status))], [200]);
    const [first, second] = await Promise.all([
      requestsCounted(`http://127.0.0.1:${managementPort}`),
      requestsCounted(`http://127.0.0.1:${managementPort + 1}`),
    ]);
    t.ok(first.total > 0 && second.total > 0, `both processes served requests (${first.total} and ${second.total})`);
    t.same(first.labels, ['0']);
    t.same(second.labels, ['1']);
  });

  t.test('a gateway that is not one of the processes cannot join their port', async (t) => {
    // Without SO_REUSEPORT it cannot bind beside them, nor can they beside it: no silent sharing
    // (docs/operations.md, "Several gateways").
    const lone = structuredClone(raw);
    lone.management = { host: '127.0.0.1', port: 0 };
    const config = validateConfig(lone, { configDir: dir, env: {} });
    await t.rejects(startGateway({ config, devKeyDir: t.testdir(), watchValidators: false }), {
      message: `cannot listen on 127.0.0.1:${port} (listen.host, listen.port): the port is in use by another process`,
    });
    t.equal((await fetch(`${url}/healthz`)).status, 200, 'the processes still serve');
  });

  t.test('of 50 refreshes of one token across both processes, exactly one wins and the replay revokes the family', async (t) => {
    const login = await fetch(`${url}/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization('app-strict') },
      body: new URLSearchParams({
        grant_type: 'password',
        username: 'alice',
        password: 'alice-pw',
        scope: 'api1 offline_access',
      }).toString(),
    });
    const first = (await login.json()) as { refresh_token: string };
    const answers = await releaseAtOnce(
      Array.from({ length: 50 }, () => port),
      formPost(
        '/connect/token',
        { grant_type: 'refresh_token', refresh_token: first.refresh_token },
        { clientId: 'app-strict', secret: 'secret' },
      ),
    );
    const winners = answers.filter((a) => a.status === 200);
    t.equal(winners.length, 1, 'exactly one success');
    t.same([...new Set(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.body}`))], [`400 ${invalidRefreshBody}`]);
    const won = JSON.parse(winners[0]?.body ?? '{}') as { refresh_token: string };
    const after = await releaseAtOnce(
      [port, port],
      formPost(
        '/connect/token',
        { grant_type: 'refresh_token', refresh_token: won.refresh_token },
        { clientId: 'app-strict', secret: 'secret' },
      ),
    );
    t.same(
      after.map((a) => `${a.status} ${a.body}`),
      [`400 ${invalidRefreshBody}`, `400 ${invalidRefreshBody}`],
      "the winner's successor died with its family",
    );
  });

  t.test('of 50 redemptions of one code across both processes, exactly one wins and the replay revokes its tokens', async (t) => {
    const flow = new AuthorizeFlow({ url, tokenUrl: `${url}/connect/token` });
    const { verifier, challenge } = pkcePair();
    const code = (await flow.code(flow.params('web', challenge))).get('code') ?? '';
    const answers = await releaseAtOnce(
      Array.from({ length: 50 }, () => port),
      formPost(
        '/connect/token',
        { grant_type: 'authorization_code', code, redirect_uri: callbackUri, code_verifier: verifier },
        { clientId: 'web', secret: 'secret' },
      ),
    );
    const winners = answers.filter((a) => a.status === 200);
    t.equal(winners.length, 1, 'exactly one 200');
    t.same([...new Set(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.body}`))], [`400 ${invalidCodeBody}`]);
    // RFC 6749 §4.1.2: the others are replays, so what the winner got is revoked.
    const won = JSON.parse(winners[0]?.body ?? '{}') as { access_token: string; refresh_token: string };
    t.same(await flow.introspect(won.access_token, 'web'), { active: false });
    t.same(await flow.introspect(won.refresh_token, 'web'), { active: false });
  });

  t.test('a process killed with SIGKILL is restarted, and the port keeps answering', async (t) => {
    const victim = children.find((line) => line.process === 0);
    if (victim === undefined) throw new Error('no process 0');
    process.kill(victim.pid, 'SIGKILL');
    await waitFor('the restart notice', cli, (lines) =>
      lines.find((line) => line.msg === 'a process exited unexpectedly: restarting it' && line.signal === 'SIGKILL'),
    );
    const statuses = await Promise.all(
      Array.from({ length: 10 }, () => fetch(`${url}/healthz`, { headers: { connection: 'close' } }).then((r) => r.status)),
    );
    t.same([...new Set(statuses)], [200], 'the other process answers meanwhile');
    const restarted = await waitFor('process 0 listening again', cli, (lines) =>
      lines.find((line) => line.msg === 'tessera listening' && line.process === 0 && line.pid !== victim.pid),
    );
    t.not(restarted.pid, victim.pid);
    t.equal((await fetch(`http://127.0.0.1:${managementPort}/healthz`)).status, 200, 'with its management listener on its port again');
  });

  t.test('SIGHUP is forwarded: each process reloads the config, and none stops', async (t) => {
    cli.child.kill('SIGHUP');
    const reloaded = await waitFor('both processes reloading', cli, (lines) => {
      const done = lines.filter((line) => line.msg === 'config reloaded' && line.supervisor !== true);
      return new Set(done.map((line) => line.process)).size === 2 ? done : undefined;
    });
    t.same([...new Set(reloaded.map((line) => line.process))].sort(), [0, 1]);
    t.equal((await fetch(`${url}/healthz`)).status, 200);
  });

  t.test('SIGTERM stops every process, then the supervisor exits 0', async (t) => {
    const pids = logLines(cli)
      .filter((line) => line.msg === 'tessera listening' && line.supervisor !== true)
      .map((line) => line.pid);
    cli.child.kill('SIGTERM');
    t.equal(await cli.exited, 0);
    t.same(
      pids.filter((pid) => isAlive(pid)),
      [],
      'no process is left',
    );
    t.match(cli.output(), /all processes stopped/);
  });
});
