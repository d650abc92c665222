// `tessera start` and signals (docs/operations.md, "Signals and shutdown"): SIGTERM fails readiness
// at once, serves through `shutdown.drainSeconds`, then exits 0; SIGHUP does not end the process.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { freePort } from '../../helpers/free_port.js';
import { startCli } from '../../helpers/cli_process.js';
import { baseTestConfig, sha256Secret } from '../../helpers/test_gateway.js';

async function status(url: string, init?: RequestInit): Promise<number | 'refused'> {
  try {
    const response = await fetch(url, init);
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 'refused';
  }
}

t.test('SIGHUP reloads the config file, refuses a broken one and never stops; SIGTERM drains, then exits 0', async (t) => {
  const dir = t.testdir();
  const port = await freePort();
  const raw = baseTestConfig();
  raw.issuer = `http://127.0.0.1:${port}`;
  raw.listen = { host: '127.0.0.1', port };
  raw.logLevel = 'info';
  raw.shutdown = { drainSeconds: 2, requestTimeoutSeconds: 5 };
  writeFileSync(join(dir, 'tessera.json'), JSON.stringify(raw));

  const cli = startCli(['start', '-c', 'tessera.json'], { cwd: dir });
  const { child, exited } = cli;
  const url = `http://127.0.0.1:${port}`;
  await cli.ready(url);

  const added = () =>
    status(`${url}/connect/token`, {
      method: 'POST',
      headers: { authorization: basicAuthorization('added', 'added-secret'), 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
  const hangUp = async (logLine: RegExp) => {
    const before = cli.output().length;
    child.kill('SIGHUP');
    // A reload boots a new worker pool (each thread loads tsx): seconds on a loaded CI machine, so
    // the wait ends when the line appears, at the latest after 30 s.
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && !logLine.test(cli.output().slice(before))) await new Promise((resolve) => setTimeout(resolve, 50));
    return cli.output().slice(before);
  };
  t.equal(await added(), 401, 'a client not in the file yet');
  (raw.clients as unknown[]).push({
    clientId: 'added',
    clientSecrets: [{ value: sha256Secret('added-secret') }],
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['api1'],
  });
  writeFileSync(join(dir, 'tessera.json'), JSON.stringify(raw));
  t.match(await hangUp(/config reloaded/), /config reloaded/);
  t.equal(child.exitCode, null, 'SIGHUP did not end the process');
  t.equal(await added(), 200, 'the client added to the file gets a token');

  writeFileSync(join(dir, 'tessera.json'), JSON.stringify({ ...raw, workers: { threads: 0 } }));
  const refused = await hangUp(/reload refused/);
  t.match(refused, /config reload refused/);
  t.match(refused, /workers\.threads/, 'the problem named as at start');
  t.equal(child.exitCode, null, 'a broken file does not end the process either');
  t.equal(await status(`${url}/readyz`), 200, 'it is still ready');
  t.equal(await added(), 200, 'and serves the config it had');

  const signalled = Date.now();
  child.kill('SIGTERM');
  let readyz = await status(`${url}/readyz`);
  for (let i = 0; i < 10 && readyz === 200; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    readyz = await status(`${url}/readyz`);
  }
  t.equal(readyz, 503, '/readyz fails as soon as SIGTERM arrives');
  const token = await status(`${url}/connect/token`, {
    method: 'POST',
    headers: { authorization: basicAuthorization('m2m'), 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&scope=api1',
  });
  t.equal(token, 200, 'requests are still served while draining');
  t.equal(await exited, 0, 'exit code 0 after a graceful stop');
  t.ok(Date.now() - signalled >= 1900, 'it served for the drain window before stopping');
  t.match(cli.output(), /draining/);
  // The failure reason of the probe before the reload names secrets, never one.
  t.notMatch(cli.output().replaceAll('wrong or expired secret', ''), /secret/i, 'no secret in the log');
});
