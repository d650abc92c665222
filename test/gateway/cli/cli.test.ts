import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { calculateJwkThumbprint, importJWK, type JWK } from 'jose';
import { generateSigningJwk } from '../../../gateway/cli/keys_generate_command.js';
import { hashClientSecret } from '../../../core/crypto/client_secret.js';
import { verifyPassword } from '../../../core/crypto/password_hash.js';
import { runCliInProcess } from '../../helpers/cli_in_process.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const mainScript = join(repoRoot, 'gateway/cli/main.ts');
const secretValue = 'K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols=';
const demoClientIds = ['m2m', 'ro.client', 'web', 'spa', 'tv', 'frontend', 'api1'];

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `tessera ARGS` from source as its own process, the way the bin runs after a build. */
function tesseraProcess(args: string[], options: { cwd?: string; input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
  // The developer's own TESSERA_* variables must not leak into the assertions.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TESSERA_')));
  const child = spawn(process.execPath, ['--import', 'tsx', mainScript, ...args], {
    cwd: options.cwd ?? repoRoot,
    env: { ...env, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin.end(options.input ?? '');
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A config that passes the schema but not the cross-reference checks. */
function brokenConfig(): string {
  const client = (clientId: string, extra: Record<string, unknown> = {}) => ({
    clientId,
    clientSecrets: [{ value: secretValue }],
    allowedGrantTypes: ['client_credentials'],
    ...extra,
  });
  return JSON.stringify({
    issuer: 'http://127.0.0.1:5000',
    apiScopes: [{ name: 'api1' }],
    clients: [client('a'), client('b'), client('c', { allowedGrantTypes: ['pasword'], allowedScopes: ['api9'] })],
  });
}

/**
 * Runs `tessera ARGS` in this process (gateway/cli/run_cli.ts, what main.ts runs): starting a
 * process that compiles the CLI with tsx costs a CPU-second or two, so only the tests of the process
 * itself spawn one. Run one at a time: `cwd` is the test process's own folder while it runs.
 */
const tessera = runCliInProcess;

const brokenConfigProblems =
  'clients[2].allowedGrantTypes[0]: unknown grant type "pasword"\n' + 'clients[2].allowedScopes[0]: unknown scope "api9"\n';

t.test('main.ts as a process: the exit code, stdin and the package.json it finds', async (t) => {
  // They share nothing and mostly wait for their processes: side by side.
  t.jobs = 4;
  t.test('--version prints the package version', async (t) => {
    const result = await tesseraProcess(['--version']);
    const { version } = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as { version: string };
    t.same(result, { code: 0, stdout: `tessera ${version}\n`, stderr: '' });
  });
  t.test('an unknown command exits 2 with a message and the help', async (t) => {
    const result = await tesseraProcess(['frobnicate']);
    t.equal(result.code, 2);
    t.equal(result.stdout, '');
    t.match(result.stderr, /^error: unknown command "frobnicate"\n\nTessera:/);
    t.match(result.stderr, /^Commands:$/m);
  });
  t.test('reads the password from stdin when none is given', async (t) => {
    const result = await tesseraProcess(['hash-password'], { input: 'correct horse\n' });
    t.equal(result.code, 0);
    t.equal(await verifyPassword('correct horse', result.stdout.trim()), true);
  });
  t.test('refuses to overwrite an existing file', async (t) => {
    const dir = t.testdir({ 'signing.jwk.json': 'precious' });
    const result = await tesseraProcess(['keys', 'generate', '--out', 'signing.jwk.json'], { cwd: dir });
    t.same(result, { code: 1, stdout: '', stderr: 'error: signing.jwk.json already exists; refusing to overwrite it\n' });
    t.equal(await readFile(join(dir, 'signing.jwk.json'), 'utf8'), 'precious');
  });
});

t.test('help', async (t) => {
  t.test('--help lists every command on one line each', async (t) => {
    const result = await tessera(['--help']);
    t.equal(result.code, 0);
    t.equal(result.stderr, '');
    for (const [name, summary] of [
      ['start', 'Start the gateway'],
      ['check-config', 'Validate a config file'],
      ['hash-secret', 'Print the stored form of a client secret'],
      ['hash-password', 'Print the stored form of a user password'],
      ['keys generate', 'Write a new private signing key'],
      ['help', 'Show this help'],
    ] as const) {
      t.match(result.stdout, new RegExp(`^  ${name} +${summary}`, 'm'), name);
    }
  });

  t.test('no arguments and "help" print the same help', async (t) => {
    const [bare, help, flag] = await Promise.all([tessera([]), tessera(['help']), tessera(['-h'])]);
    t.equal(bare.code, 0);
    t.equal(bare.stdout, help.stdout);
    t.equal(bare.stdout, flag.stdout);
  });

  t.test('"help COMMAND" and "COMMAND --help" show the command usage', async (t) => {
    const [help, flag] = await Promise.all([tessera(['help', 'keys', 'generate']), tessera(['keys', 'generate', '--help'])]);
    t.equal(help.code, 0);
    t.match(help.stdout, /^Usage: tessera keys generate \[--alg ES256\|EdDSA\|RS256\|PS256\] \[--out FILE\]\n/);
    t.equal(flag.stdout, help.stdout);
  });

  t.test('a command group without its subcommand exits 2 and names the subcommand', async (t) => {
    const result = await tessera(['keys']);
    t.equal(result.code, 2);
    t.match(result.stderr, /^error: unknown or missing subcommand for "keys" \(did you mean "tessera keys generate"\?\)\n/);
  });

  t.test('an unknown option exits 2 with the command usage', async (t) => {
    const result = await tessera(['hash-secret', '--pepper', 'x']);
    t.equal(result.code, 2);
    t.match(result.stderr, /^error: tessera hash-secret: Unknown option '--pepper'/);
    t.match(result.stderr, /\nUsage: tessera hash-secret SECRET\n$/);
  });
});

t.test('hash-secret', async (t) => {
  t.test('prints the stored form of "secret"', async (t) => {
    t.same(await tessera(['hash-secret', 'secret']), { code: 0, stdout: `${secretValue}\n`, stderr: '' });
  });

  t.test('takes a secret that starts with "-" after "--"', async (t) => {
    const result = await tessera(['hash-secret', '--', '--help']);
    t.equal(result.code, 0);
    t.equal(result.stdout, `${hashClientSecret('--help')}\n`);
  });

  t.test('without a secret exits 2 with the usage', async (t) => {
    const result = await tessera(['hash-secret']);
    t.equal(result.code, 2);
    t.equal(result.stderr, 'error: tessera hash-secret: expected exactly one SECRET\nUsage: tessera hash-secret SECRET\n');
  });
});

t.test('hash-password', async (t) => {
  t.test('prints a PHC string that verifies the password given as an argument', async (t) => {
    const result = await tessera(['hash-password', 'alice']);
    t.equal(result.code, 0);
    t.match(result.stdout, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$[^$]+\$[^$]+\n$/);
    t.equal(await verifyPassword('alice', result.stdout.trim()), true);
  });

  t.test('refuses an empty password', async (t) => {
    const result = await tessera(['hash-password'], { input: '\n' });
    t.equal(result.code, 2);
    t.match(result.stderr, /^error: tessera hash-password: the password must not be empty\n/);
  });
});

t.test('check-config', async (t) => {
  t.test('accepts the demo config, exits 0 and names every client', async (t) => {
    const result = await tessera(['check-config', 'config/demo.json']);
    t.equal(result.code, 0);
    t.equal(result.stderr, '');
    t.match(result.stdout, /^config\/demo\.json is valid\.\n/);
    t.match(result.stdout, /^issuer +http:\/\/127\.0\.0\.1:5000$/m);
    t.match(result.stdout, /^signing +ES256 with a development key/m);
    t.match(result.stdout, /^users: 2$/m);
    for (const clientId of demoClientIds) t.match(result.stdout, new RegExp(`^  ${clientId.replace('.', '\\.')}: `, 'm'), clientId);
  });

  t.test('on Redis the development key is said to live in the store, not under .tessera/', async (t) => {
    const dir = t.testdir({
      'redis.json': JSON.stringify({ issuer: 'http://127.0.0.1:5000', store: { type: 'redis', url: 'redis://:hunter2@127.0.0.1:6379' } }),
    });
    const result = await tessera(['check-config', 'redis.json'], { cwd: dir });
    t.equal(result.code, 0, result.stderr);
    t.match(result.stdout, /^signing +ES256 with keys kept in the store and generated by Tessera/m);
    t.notMatch(result.stdout, /\.tessera/);
    t.notMatch(result.stdout, /hunter2/, 'the Redis password masked');
  });

  t.test('checks the validator modules as start does: two claiming one grant type exit 2, each named', async (t) => {
    const validator = "export default class { readonly grantType = 'twice'; async validate() {} }\n";
    const dir = t.testdir({
      'tessera.json': JSON.stringify({ issuer: 'http://127.0.0.1:5000', validatorsDir: 'v' }),
      v: { 'a.ts': validator, 'b.ts': validator },
    });
    const result = await tessera(['check-config', 'tessera.json'], { cwd: dir });
    t.same(result, {
      code: 2,
      stdout: '',
      stderr:
        'error: tessera.json has 2 problems:\n' +
        `${join(dir, 'v/a.ts')}: grant type "twice" is also registered by ${join(dir, 'v/b.ts')}\n` +
        `${join(dir, 'v/b.ts')}: grant type "twice" is also registered by ${join(dir, 'v/a.ts')}\n`,
    });
  });

  t.test('reports every problem in one run, the validator that does not compile first', async (t) => {
    const client = (clientId: string, extra: Record<string, unknown>) => ({
      clientId,
      clientSecrets: [{ value: secretValue }],
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1'],
      ...extra,
    });
    const dir = t.testdir({
      'tessera.json': JSON.stringify({
        issuer: 'http://127.0.0.1:5000',
        validatorsDir: 'v',
        signing: { keys: [{ file: 'missing.jwk.json' }] },
        apiScopes: [{ name: 'api1' }],
        clients: [
          client('a', { allowedGrantTypes: ['urn:hello'] }),
          client('b', { clientSecret: 'x', allowedScopes: ['api9'] }),
          // A bad entry is dropped for the cross-reference checks; the entries after it keep their index.
          { clientId: 7 },
          client('d', { accessTokenLifetime: 'long', clientSecrets: [] }),
        ],
      }),
      v: { 'hello.ts': "export default class { readonly grantType = 'urn:hello'; async validate() { return 1 + ; } }\n" },
    });
    const result = await tessera(['check-config', 'tessera.json'], { cwd: dir });
    t.same(result, {
      code: 2,
      stdout: '',
      stderr:
        'error: tessera.json has 9 problems:\n' +
        `${join(dir, 'v/hello.ts')}: cannot be imported: line 1, column 87: Unexpected ";"\n` +
        'clients[1].clientSecret: unknown field\n' +
        'clients[2].clientId: must be a string (got number)\n' +
        'clients[2].allowedGrantTypes: is required\n' +
        'clients[3].accessTokenLifetime: must be a number (got string)\n' +
        'clients[0].allowedGrantTypes[0]: unknown grant type "urn:hello" (or its validator did not load: see the validator problems above)\n' +
        'clients[1].allowedScopes[0]: unknown scope "api9"\n' +
        'clients[3].clientSecrets: must list at least one secret when requireClientSecret is true\n' +
        `signing.keys[0].file: cannot read ${JSON.stringify(join(dir, 'missing.jwk.json'))} (no such file)\n`,
    });
  });

  t.test('a broken config exits 2 with one line per problem', async (t) => {
    const dir = t.testdir({ 'broken.json': brokenConfig() });
    const result = await tessera(['check-config', 'broken.json'], { cwd: dir });
    t.same(result, { code: 2, stdout: '', stderr: `error: broken.json has 2 problems:\n${brokenConfigProblems}` });
  });

  t.test('a missing file exits 2', async (t) => {
    const dir = t.testdir({});
    const result = await tessera(['check-config', 'nope.json'], { cwd: dir });
    t.same(result, {
      code: 2,
      stdout: '',
      stderr: 'error: nope.json has 1 problem:\nnope.json: cannot read the config file (no such file)\n',
    });
  });

  t.test('applies environment overrides like start does', async (t) => {
    const result = await tessera(['check-config', 'config/demo.json'], { env: { TESSERA_PORT: 'eighty' } });
    t.equal(result.code, 2);
    t.equal(result.stderr, 'error: config/demo.json has 1 problem:\nenv.TESSERA_PORT: must be an integer from 0 to 65535 (got "eighty")\n');
  });

  t.test('checks that the signing key files hold private keys', async (t) => {
    const { d: _d, ...publicJwk } = await generateSigningJwk('ES256');
    const config = (keys: string[]) =>
      JSON.stringify({ issuer: 'http://127.0.0.1:5000', signing: { algorithm: 'ES256', keys: keys.map((file) => ({ file })) } });
    const dir = t.testdir({
      'good.json': config(['keys/private.jwk.json']),
      'bad.json': config(['keys/public.jwk.json', 'keys/missing.jwk.json']),
      keys: {
        'private.jwk.json': JSON.stringify(await generateSigningJwk('ES256')),
        'public.jwk.json': JSON.stringify(publicJwk),
      },
    });
    const good = await tessera(['check-config', 'good.json'], { cwd: dir });
    t.equal(good.code, 0, good.stderr);
    t.match(good.stdout, /^signing +ES256 with .*private\.jwk\.json \(signs\)$/m);

    const bad = await tessera(['check-config', 'bad.json'], { cwd: dir });
    t.equal(bad.code, 2);
    t.equal(
      bad.stderr,
      'error: bad.json has 2 problems:\n' +
        `signing.keys[0].file: ${JSON.stringify(join(dir, 'keys/public.jwk.json'))} holds a public key; a private JWK is needed to sign\n` +
        `signing.keys[1].file: cannot read ${JSON.stringify(join(dir, 'keys/missing.jwk.json'))} (no such file)\n`,
    );
  });
});

t.test('keys generate', async (t) => {
  t.test("its default folder, keys/ at the repository's root, is git-ignored", async (t) => {
    const check = spawnSync('git', ['check-ignore', '--quiet', 'keys/signing-ES256-abcdefgh.jwk.json'], { cwd: repoRoot });
    if (check.error !== undefined) t.comment('git is not installed: not checked');
    else t.equal(check.status, 0, 'git check-ignore: ignored');
  });
  t.test('writes a private JWK with mode 0600 whose kid is its RFC 7638 thumbprint', async (t) => {
    const dir = t.testdir({});
    const result = await tessera(['keys', 'generate', '--alg', 'EdDSA'], { cwd: dir });
    t.equal(result.code, 0, result.stderr);
    const match = /^Wrote a private EdDSA signing key to (keys\/signing-EdDSA-([\w-]{8})\.jwk\.json)\nkid: ([\w-]{43})\n/.exec(
      result.stdout,
    );
    t.ok(match, result.stdout);
    const [, file, prefix, kid] = match as unknown as [string, string, string, string];
    t.equal(kid.slice(0, 8), prefix);

    const path = join(dir, file);
    t.equal((await stat(path)).mode & 0o777, 0o600);
    const jwk = JSON.parse(await readFile(path, 'utf8')) as JWK;
    t.match(jwk, { kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig', kid });
    t.type(jwk.d, 'string');
    t.equal(await calculateJwkThumbprint(jwk), kid);
    t.ok(await importJWK(jwk, 'EdDSA'));
  });

  t.test('defaults to ES256 and honours --out', async (t) => {
    const dir = t.testdir({});
    const result = await tessera(['keys', 'generate', '--out', 'signing.jwk.json'], { cwd: dir });
    t.equal(result.code, 0, result.stderr);
    t.match(result.stdout, /^Wrote a private ES256 signing key to signing\.jwk\.json\n/);
    const jwk = JSON.parse(await readFile(join(dir, 'signing.jwk.json'), 'utf8')) as JWK;
    t.match(jwk, { kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    t.ok(await importJWK(jwk, 'ES256'));
  });

  t.test('rejects an unsupported algorithm with exit 2', async (t) => {
    const result = await tessera(['keys', 'generate', '--alg', 'HS256'], { cwd: t.testdir({}) });
    t.equal(result.code, 2);
    t.match(result.stderr, /^error: tessera keys generate: unsupported --alg "HS256"; use one of ES256, EdDSA, RS256, PS256\n/);
  });
});

t.test('start', async (t) => {
  t.test('reports every problem in one run, the validator that does not compile first', async (t) => {
    const client = (clientId: string, extra: Record<string, unknown>) => ({
      clientId,
      clientSecrets: [{ value: secretValue }],
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1'],
      ...extra,
    });
    const dir = t.testdir({
      'tessera.json': JSON.stringify({
        issuer: 'http://127.0.0.1:5000',
        validatorsDir: 'v',
        signing: { keys: [{ file: 'missing.jwk.json' }] },
        apiScopes: [{ name: 'api1' }],
        clients: [
          client('a', { allowedGrantTypes: ['urn:hello'] }),
          client('b', { clientSecret: 'x', allowedScopes: ['api9'] }),
          // A bad entry is dropped for the cross-reference checks; the entries after it keep their index.
          { clientId: 7 },
          client('d', { accessTokenLifetime: 'long', clientSecrets: [] }),
        ],
      }),
      v: { 'hello.ts': "export default class { readonly grantType = 'urn:hello'; async validate() { return 1 + ; } }\n" },
    });
    const result = await tessera(['check-config', 'tessera.json'], { cwd: dir });
    t.same(result, {
      code: 2,
      stdout: '',
      stderr:
        'error: tessera.json has 9 problems:\n' +
        `${join(dir, 'v/hello.ts')}: cannot be imported: line 1, column 87: Unexpected ";"\n` +
        'clients[1].clientSecret: unknown field\n' +
        'clients[2].clientId: must be a string (got number)\n' +
        'clients[2].allowedGrantTypes: is required\n' +
        'clients[3].accessTokenLifetime: must be a number (got string)\n' +
        'clients[0].allowedGrantTypes[0]: unknown grant type "urn:hello" (or its validator did not load: see the validator problems above)\n' +
        'clients[1].allowedScopes[0]: unknown scope "api9"\n' +
        'clients[3].clientSecrets: must list at least one secret when requireClientSecret is true\n' +
        `signing.keys[0].file: cannot read ${JSON.stringify(join(dir, 'missing.jwk.json'))} (no such file)\n`,
    });
  });

  t.test('a broken config exits 2 with one line per problem', async (t) => {
    const dir = t.testdir({ 'broken.json': brokenConfig() });
    const result = await tessera(['start', '--config', 'broken.json'], { cwd: dir });
    t.same(result, { code: 2, stdout: '', stderr: `error: broken.json has 2 problems:\n${brokenConfigProblems}` });
  });

  t.test('a missing config file exits 2', async (t) => {
    const dir = t.testdir({});
    const result = await tessera(['start'], { cwd: dir });
    t.same(result, {
      code: 2,
      stdout: '',
      stderr: 'error: config/demo.json has 1 problem:\nconfig/demo.json: cannot read the config file (no such file)\n',
    });
  });

  t.test('a bad environment override exits 2', async (t) => {
    const dir = t.testdir({ 'tessera.json': JSON.stringify({ issuer: 'http://127.0.0.1:5000' }) });
    const result = await tessera(['start', '-c', 'tessera.json'], { cwd: dir, env: { TESSERA_WORKERS: '0' } });
    t.equal(result.code, 2);
    t.equal(result.stderr, 'error: tessera.json has 1 problem:\nenv.TESSERA_WORKERS: must be an integer from 1 to 64 (got "0")\n');
  });
});
