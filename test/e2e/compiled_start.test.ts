// What a newcomer runs: the compiled CLI (`npm start`, dist/) on the demo config, with the shipped
// TypeScript validators loaded from validators/ at run time. The validators must see the same
// validator API as the compiled gateway (workers/typescript_loader.ts), or every delegation and
// token exchange would be refused. Needs a current build (`npm run build`; `npm ci` builds).
import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { basicAuthorization } from '../helpers/basic_authorization.js';
import { freePort } from '../helpers/free_port.js';
import { killAtExit } from '../helpers/kill_at_exit.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

t.test('the compiled gateway serves the demo config, the shipped TypeScript validators included', async (t) => {
  const dir = t.testdir();
  const port = await freePort();
  const demo = JSON.parse(readFileSync(path.join(repoRoot, 'config/demo.json'), 'utf8')) as Record<string, unknown>;
  demo.issuer = `http://127.0.0.1:${port}`;
  demo.listen = { host: '127.0.0.1', port };
  demo.validatorsDir = path.join(repoRoot, 'validators');
  demo.logLevel = 'warn';
  writeFileSync(path.join(dir, 'demo.json'), JSON.stringify(demo));
  // Plain node on the compiled entry, as `npm start` runs it: no tsx from the test runner.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TESSERA_') && name !== 'NODE_OPTIONS'));
  const child = spawn(process.execPath, [path.join(repoRoot, 'dist/gateway/cli/main.js'), 'start', '--config', 'demo.json'], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  killAtExit(child);
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  t.teardown(() => {
    child.kill('SIGINT');
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (ready === 200) break;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the compiled gateway did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const token = async (clientId: string, params: Record<string, string>) => {
    const res = await fetch(`${url}/connect/token`, {
      method: 'POST',
      headers: { authorization: basicAuthorization(clientId), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(params).toString(),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const user = await token('frontend', { grant_type: 'password', username: 'alice', password: 'alice', scope: 'api1' });
  t.equal(user.status, 200, 'the demo user signs in');
  const userToken = user.body.access_token as string;
  const delegated = await token('api1', { grant_type: 'delegation', token: userToken, scope: 'api2' });
  t.equal(delegated.status, 200, "the README's delegation example works");
  if (delegated.status !== 200) t.comment(JSON.stringify(delegated.body));
  const exchanged = await token('exchanger', {
    grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
    subject_token: userToken,
    subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    scope: 'api2',
  });
  t.equal(exchanged.status, 200, 'token exchange works');
  if (exchanged.status !== 200) t.comment(JSON.stringify(exchanged.body));
  t.notMatch(output, /validator result refused/, 'no validator result was refused');
});
