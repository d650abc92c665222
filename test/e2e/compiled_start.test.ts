// What a newcomer runs: the compiled CLI (`npm start`, dist/) on the demo config, with the shipped
// TypeScript validators loaded from validators/ at run time. The validators must see the same
// validator API as the compiled gateway (core/typescript_loader.ts), or every delegation and
// token exchange would be refused. Needs a current build (`npm run build`; `npm ci` builds).
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { basicAuthorization } from '../helpers/basic_authorization.js';
import { freePort } from '../helpers/free_port.js';
import { startCli } from '../helpers/cli_process.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

t.test('the compiled gateway serves the demo config, the shipped TypeScript validators included', async (t) => {
  const dir = t.testdir();
  const port = await freePort();
  const demo = JSON.parse(readFileSync(path.join(repoRoot, 'config/demo.json'), 'utf8')) as Record<string, unknown>;
  demo.issuer = `http://127.0.0.1:${port}`;
  demo.listen = { host: '127.0.0.1', port };
  // A free management port: the demo's 9464 may be another gateway's, and a gateway takes its ports
  // to itself (docs/operations.md, "Several gateways").
  demo.management = { host: '127.0.0.1', port: 0 };
  demo.validatorsDir = path.join(repoRoot, 'validators');
  demo.logLevel = 'warn';
  writeFileSync(path.join(dir, 'demo.json'), JSON.stringify(demo));
  const cli = startCli(['start', '--config', 'demo.json'], { cwd: dir, compiled: true });
  t.teardown(() => {
    cli.child.kill('SIGINT');
  });
  const url = `http://127.0.0.1:${port}`;
  await cli.ready(url);
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
  t.notMatch(cli.output(), /validator result refused/, 'no validator result was refused');
});

t.test('a validator outside the package folder: check-config says tessera/validator must resolve from its folder', async (t) => {
  // Not t.testdir: that is inside this package, whose self-reference resolves the name. The compiled
  // CLI, since under tsx the tsconfig's paths would resolve it anyway.
  const outside = mkdtempSync(path.join(tmpdir(), 'tessera-outside-'));
  t.teardown(() => rmSync(outside, { recursive: true, force: true }));
  const api =
    "import { GrantValidationResult } from 'tessera/validator';\nexport default class { grantType = 'outside'; async validate() {} }\n";
  writeFileSync(path.join(outside, 'api.mjs'), api);
  // With no "type": "module" package.json above it, a .ts file is compiled as CommonJS.
  writeFileSync(
    path.join(outside, 'typed.ts'),
    "import type { ExtensionGrantValidator } from 'tessera/validator';\nexport default class { readonly grantType = 'typed'; async validate() {} }\n",
  );
  const dir = t.testdir({ 'tessera.json': JSON.stringify({ issuer: 'http://127.0.0.1:5000', validatorsDir: outside }) });
  const result = spawnSync(process.execPath, [path.join(repoRoot, 'dist/gateway/cli/main.js'), 'check-config', 'tessera.json'], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 60_000,
  });
  t.equal(result.status, 2, result.stderr);
  t.match(
    result.stderr,
    `${path.join(outside, 'api.mjs')}: cannot be imported: Cannot find package 'tessera' imported from ${path.join(outside, 'api.mjs')} (tessera/validator must resolve from the validator's folder: see validators/README.md, "Outside the package folder")\n`,
  );
  if ((process.features as { typescript?: unknown }).typescript) {
    // Node 22.18 and later strip types themselves and load the module: it is reported, not hidden.
    t.match(result.stderr, `${path.join(outside, 'typed.ts')}: `);
  } else {
    t.match(result.stderr, `${path.join(outside, 'typed.ts')}: cannot be imported: `);
    t.match(result.stderr, '(a .ts module is an ES module only under a package.json with "type": "module"');
  }
  t.notMatch(result.stderr, /line \d+/, "no line of Node's own files");
});
