// Validators fail closed (validators/README.md, "When things go wrong"): a result Tessera did not
// build, a subject that is not a non-empty string, claims of the wrong shape or claims that would
// overwrite what the service sets are refused as invalid_grant, never issued, and the log says
// why in one line naming the validator. End to end: `tessera start` in a child process, so the
// worker threads' own log lines are read as an operator reads them.
import t from 'tap';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { freePort } from '../../helpers/free_port.js';
import { killAtExit } from '../../helpers/kill_at_exit.js';
import { baseTestConfig, sha256Secret } from '../../helpers/test_gateway.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const mainScript = join(repoRoot, 'gateway/cli/main.ts');
const fixture = fileURLToPath(new URL('../../fixtures/validators/bad_results.ts', import.meta.url));

interface LogLine {
  level: number;
  msg: string;
  validator?: string;
  grantType?: string;
  reason?: string;
}

t.test('a validator result that is not a well-formed success never issues a token', async (t) => {
  const dir = t.testdir();
  mkdirSync(join(dir, 'validators'));
  copyFileSync(fixture, join(dir, 'validators', 'bad_results.ts'));
  const port = await freePort();
  const raw = baseTestConfig();
  raw.issuer = `http://127.0.0.1:${port}`;
  raw.listen = { host: '127.0.0.1', port };
  raw.logLevel = 'info';
  raw.validatorsDir = join(dir, 'validators');
  (raw.clients as unknown[]).push({
    clientId: 'ext',
    clientSecrets: [{ value: sha256Secret('secret') }],
    allowedGrantTypes: ['test_bad_result'],
    allowedScopes: ['api1'],
  });
  writeFileSync(join(dir, 'tessera.json'), JSON.stringify(raw));

  // From the repository root, so that the fixture's `tessera/validator` resolves as in the tests.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TESSERA_')));
  const child = spawn(process.execPath, ['--import', 'tsx', mainScript, 'start', '-c', join(dir, 'tessera.json')], {
    cwd: repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  killAtExit(child);
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (ready === 200) break;
    if (Date.now() > deadline || child.exitCode !== null) {
      t.fail(`the gateway did not become ready: ${output}`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }

  const post = async (params: Record<string, string>) => {
    const res = await fetch(`${url}/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization('ext') },
      body: new URLSearchParams({ grant_type: 'test_bad_result', scope: 'api1', ...params }).toString(),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const logLines = (): LogLine[] =>
    output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine);

  const good = await post({});
  t.equal(good.status, 200, 'the fixture issues a token when its result is well formed');
  t.ok(typeof good.body.access_token === 'string');

  const cases: [string, Record<string, string>, RegExp][] = [
    ['a plain object, not built by GrantValidationResult', { case: 'plain_object' }, /not built by GrantValidationResult/],
    ['success(123 as any)', { case: 'numeric_subject' }, /subject that is not a non-empty string/],
    ["success('')", { case: 'empty_subject' }, /subject that is not a non-empty string/],
    ['success({ id } as any)', { case: 'object_subject' }, /subject that is not a non-empty string/],
    ['claims that are a string', { case: 'claims_string' }, /claims that are neither/],
    ['claim pairs with a number value', { case: 'claims_pairs' }, /\{ type, value \} pairs of strings/],
    ['a claim whose value is a function', { case: 'claims_function' }, /claim department a value that is not a JSON claim value/],
    ['an act claim that is not an object', { case: 'act_string' }, /act claim that is not an object/],
    ...['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti', 'client_id', 'cnf', 'scope', 'amr', 'auth_time', 'idp'].map(
      (claim): [string, Record<string, string>, RegExp] => [
        `the protected claim ${claim}`,
        { case: 'protected', claim },
        new RegExp(`protected claim ${claim}$`),
      ],
    ),
    ['the protected claim sub as a pair', { case: 'protected_pair', claim: 'sub' }, /protected claim sub$/],
  ];
  for (const [name, params, reason] of cases) {
    const before = logLines().length;
    const r = await post(params);
    t.equal(r.status, 400, `${name}: 400`);
    t.same(r.body, { error: 'invalid_grant' }, `${name}: invalid_grant and nothing else`);
    // Worker threads write their own lines; give them a moment to arrive.
    const end = Date.now() + 5000;
    let refusals: LogLine[] = [];
    while (Date.now() < end) {
      refusals = logLines()
        .slice(before)
        .filter((line) => line.msg.startsWith('validator result refused'));
      if (refusals.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    t.equal(refusals.length, 1, `${name}: one log line`);
    t.match(refusals[0]?.reason, reason, `${name}: the log says why`);
    t.equal(refusals[0]?.validator, 'bad_results.ts', `${name}: the log names the validator's module`);
    t.equal(refusals[0]?.grantType, 'test_bad_result', `${name}: and its grant type`);
  }

  const mutated = await post({ case: 'mutated' });
  t.equal(mutated.status, 200, 'a built result cannot be changed after the fact');
  const payload = JSON.parse(Buffer.from(String(mutated.body.access_token).split('.')[1] ?? '', 'base64url').toString('utf8')) as {
    sub: unknown;
  };
  t.equal(payload.sub, 'alice', 'the token is for the subject the result was built with');
  t.notMatch(output, /forged|hunter2/, 'no refused value reaches the log');
});
