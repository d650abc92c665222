// Loading validator modules (gateway/validators/validator_loader.ts): fixture modules dropped into a
// temporary folder, each problem reported as a ConfigError naming the file; and `tessera start`
// refusing to start over a broken validator.
import t from 'tap';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ConfigError } from '../../../gateway/config/config_error.js';
import { builtInGrantTypes } from '../../../core/grant_types.js';
import { listValidatorFiles, loadValidatorModules, peekGrantTypes } from '../../../gateway/validators/validator_loader.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

const tsValidator = (grantType: string) => `
import { GrantValidationResult, type ExtensionGrantValidationContext, type ExtensionGrantValidator } from 'tessera/validator';

export default class Validator implements ExtensionGrantValidator {
  readonly grantType: string = ${JSON.stringify(grantType)};
  async validate(context: ExtensionGrantValidationContext): Promise<void> {
    context.result = GrantValidationResult.success(context.request.raw.get('sub'), this.grantType);
  }
}
`;

const jsValidator = (grantType: string) => `
export default class Validator {
  grantType = ${JSON.stringify(grantType)};
  async validate(context) {}
}
`;

/** Loads the folder and returns the problems it was refused with (none: `[]`). */
async function problemsOf(dir: string): Promise<{ path: string; message: string }[]> {
  try {
    await loadValidatorModules({ dir }, builtInGrantTypes);
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return [...err.problems];
  }
}

t.test('loading validators', async (t) => {
  t.test('loads a TypeScript module with no build step', async (t) => {
    const dir = t.testdir({ 'my_grant.ts': tsValidator('my_grant') });
    const loaded = await loadValidatorModules({ dir }, builtInGrantTypes);
    t.same(
      loaded.map((m) => ({ file: m.file, url: m.url, grantType: m.grantType })),
      [{ file: path.join(dir, 'my_grant.ts'), url: pathToFileURL(path.join(dir, 'my_grant.ts')).href, grantType: 'my_grant' }],
    );
    t.match(loaded[0]?.version, /^\d+-\d+$/);
  });

  t.test('loads a validator that imports the package root, as validators written before tessera/validator do', async (t) => {
    const dir = t.testdir({ 'root_grant.ts': tsValidator('root_grant').replace("from 'tessera/validator'", "from 'tessera'") });
    const loaded = await loadValidatorModules({ dir }, builtInGrantTypes);
    t.same(
      loaded.map((m) => m.grantType),
      ['root_grant'],
    );
  });

  t.test('loads a JavaScript (.mjs) module', async (t) => {
    const dir = t.testdir({ 'js_grant.mjs': jsValidator('js_grant') });
    const loaded = await loadValidatorModules({ dir }, builtInGrantTypes);
    t.same(
      loaded.map((m) => m.grantType),
      ['js_grant'],
    );
  });

  t.test('loads modules added by URL beside those of the folder', async (t) => {
    const dir = t.testdir({ 'a.ts': tsValidator('grant_a'), extra: { 'b.mjs': jsValidator('grant_b') } });
    const loaded = await loadValidatorModules({ dir, modules: [pathToFileURL(path.join(dir, 'extra', 'b.mjs')).href] }, builtInGrantTypes);
    t.same(
      loaded.map((m) => m.grantType),
      ['grant_a', 'grant_b'],
    );
  });

  t.test('skips declaration files, tests, hidden and underscore files, and non-modules', async (t) => {
    const dir = t.testdir({
      'grant.ts': tsValidator('grant'),
      'grant.d.ts': 'export {};',
      'grant.test.ts': 'throw new Error("not a validator")',
      '_shared.ts': 'throw new Error("not a validator")',
      '.draft.ts': 'throw new Error("not a validator")',
      'README.md': '# validators',
      'data.json': '{}',
    });
    t.same(await listValidatorFiles(dir), [path.join(dir, 'grant.ts')]);
    t.same(await problemsOf(dir), []);
  });

  t.test('treats a missing folder as no validators', async (t) => {
    const dir = t.testdir({});
    t.same(await loadValidatorModules({ dir: path.join(dir, 'nope') }, builtInGrantTypes), []);
  });

  t.test('refuses a grant type registered by two files, naming each with the other', async (t) => {
    // The shipped name taken by a copy that sorts first: the copy is blamed too, not only the original.
    const dir = t.testdir({
      'a_copy.ts': tsValidator('dup_grant'),
      'delegation.mjs': jsValidator('dup_grant'),
      'other.ts': tsValidator('other'),
    });
    t.same(await problemsOf(dir), [
      { path: path.join(dir, 'a_copy.ts'), message: `grant type "dup_grant" is also registered by ${path.join(dir, 'delegation.mjs')}` },
      { path: path.join(dir, 'delegation.mjs'), message: `grant type "dup_grant" is also registered by ${path.join(dir, 'a_copy.ts')}` },
    ]);
  });

  t.test('loads a profile service, and refuses a second one, naming each file with the other', async (t) => {
    const profileService = `
      export default class Profiles {
        kind = 'profile_service';
        async getProfileData() { return {}; }
        async isActive() { return true; }
      }
    `;
    const one = t.testdir({ 'profiles.mjs': profileService, 'grant.ts': tsValidator('grant') });
    const loaded = await loadValidatorModules({ dir: one }, builtInGrantTypes);
    t.same(
      loaded.map((m) => [path.basename(m.file), m.kind]),
      [
        ['grant.ts', 'extension_grant'],
        ['profiles.mjs', 'profile_service'],
      ],
    );
    const two = t.testdir({ 'a_profiles.mjs': profileService, 'b_profiles.mjs': profileService });
    t.same(await problemsOf(two), [
      { path: path.join(two, 'a_profiles.mjs'), message: `a profile service is also registered by ${path.join(two, 'b_profiles.mjs')}` },
      { path: path.join(two, 'b_profiles.mjs'), message: `a profile service is also registered by ${path.join(two, 'a_profiles.mjs')}` },
    ]);
    const half = t.testdir({ 'half.mjs': "export default class { kind = 'profile_service'; async isActive() { return true; } }" });
    t.same(await problemsOf(half), [
      { path: path.join(half, 'half.mjs'), message: 'its profile service lacks getProfileData(context) or isActive(context)' },
    ]);
  });

  t.test('refuses a grant type that collides with a built-in grant', async (t) => {
    const dir = t.testdir({ 'password.ts': tsValidator('password') });
    t.same(await problemsOf(dir), [
      { path: path.join(dir, 'password.ts'), message: 'grant type "password" is already registered by a built-in grant' },
    ]);
  });

  t.test('refuses a module that throws at import, with the first line of its message', async (t) => {
    const dir = t.testdir({ 'boom.ts': 'throw new Error("no database configured\\nsecond line");\nexport default class {}\n' });
    t.same(await problemsOf(dir), [{ path: path.join(dir, 'boom.ts'), message: 'cannot be imported: no database configured' }]);
  });

  t.test('refuses a TypeScript module that does not compile, with the compiler message and its line', async (t) => {
    const dir = t.testdir({ 'broken.ts': 'export default class {\n  grantType = ;\n}\n' });
    t.same(await problemsOf(dir), [
      { path: path.join(dir, 'broken.ts'), message: 'cannot be imported: line 2, column 14: Unexpected ";"' },
    ]);
  });

  t.test('refuses a JavaScript module with a syntax error, with the message and its line', async (t) => {
    const dir = t.testdir({ 'broken.mjs': "export default class {\n  grantType = 'x';\n  async validate() { foo( ; }\n}\n" });
    t.same(await problemsOf(dir), [{ path: path.join(dir, 'broken.mjs'), message: "cannot be imported: line 3: Unexpected token ';'" }]);
  });

  t.test('refuses a module without a default export', async (t) => {
    const dir = t.testdir({ 'named.ts': 'export class Validator { grantType = "named"; async validate() {} }\n' });
    t.same(await problemsOf(dir), [{ path: path.join(dir, 'named.ts'), message: 'has no default export that is a validator class' }]);
  });

  t.test('refuses a default export that is not a class', async (t) => {
    const dir = t.testdir({
      'object.mjs': 'export default { grantType: "object_grant", async validate() {} };\n',
      'arrow.mjs': 'export default () => ({ grantType: "arrow_grant", async validate() {} });\n',
    });
    t.same(await problemsOf(dir), [
      { path: path.join(dir, 'arrow.mjs'), message: 'has no default export that is a validator class' },
      { path: path.join(dir, 'object.mjs'), message: 'has no default export that is a validator class' },
    ]);
  });

  t.test('refuses a class whose constructor throws, without a grantType, or without validate', async (t) => {
    const dir = t.testdir({
      'ctor.mjs': 'export default class { constructor() { throw new Error("needs an API key"); } }\n',
      'no_grant_type.mjs': 'export default class { async validate() {} }\n',
      'no_validate.mjs': 'export default class { grantType = "no_validate"; }\n',
    });
    t.same(await problemsOf(dir), [
      { path: path.join(dir, 'ctor.mjs'), message: 'its constructor threw: needs an API key' },
      { path: path.join(dir, 'no_grant_type.mjs'), message: 'its validator has no grantType' },
      { path: path.join(dir, 'no_validate.mjs'), message: 'its validator has no validate(context) method' },
    ]);
  });

  t.test('reports every broken file at once and loads none', async (t) => {
    const dir = t.testdir({
      'good.ts': tsValidator('good'),
      'password.mjs': jsValidator('password'),
      'named.mjs': 'export const x = 1;\n',
    });
    t.same(
      (await problemsOf(dir)).map((p) => path.basename(p.path)),
      ['named.mjs', 'password.mjs'],
    );
  });

  t.test('peeks the grant types of loadable modules and skips the others', async (t) => {
    const dir = t.testdir({ 'a.ts': tsValidator('peek_a'), 'b.mjs': 'throw new Error("x")', 'c.mjs': jsValidator('peek_c') });
    const urls = ['a.ts', 'b.mjs', 'c.mjs'].map((f) => pathToFileURL(path.join(dir, f)).href);
    t.same(await peekGrantTypes(urls), ['peek_a', 'peek_c']);
  });
});

t.test('tessera start exits 2 with a line naming a broken validator file', async (t) => {
  const dir = t.testdir({
    'tessera.json': JSON.stringify({
      issuer: 'http://127.0.0.1:5000',
      listen: { host: '127.0.0.1', port: 0 },
      logLevel: 'silent',
      validatorsDir: 'validators',
      apiScopes: [{ name: 'api1' }],
      clients: [
        {
          clientId: 'm2m',
          clientSecrets: [{ value: 'K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols=' }],
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['api1'],
        },
        // Lists the broken module's grant type: unknown, but the module's own problem comes first.
        {
          clientId: 'broken-user',
          clientSecrets: [{ value: 'K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols=' }],
          allowedGrantTypes: ['broken_grant'],
          allowedScopes: ['api1'],
        },
      ],
    }),
    validators: {
      'fine.ts': tsValidator('fine_grant'),
      'broken.ts': 'throw new Error("boom at import");\nexport default class { readonly grantType = "broken_grant"; }\n',
    },
  });
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TESSERA_')));
  // The working folder is the test's, so the development key lands there.
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(repoRoot, 'gateway/cli/main.ts'), 'start', '--config', 'tessera.json'],
    {
      cwd: dir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve, reject) => {
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (c) => {
      clearTimeout(killer);
      resolve(c);
    });
  });
  t.equal(code, 2);
  t.equal(
    stderr,
    'error: tessera.json has 2 problems:\n' +
      `${path.join(dir, 'validators', 'broken.ts')}: cannot be imported: boom at import\n` +
      'clients[1].allowedGrantTypes[0]: unknown grant type "broken_grant" (or its validator did not load: see the validator problems above)\n',
  );
  t.notMatch(stdout, /Tessera is running/);
});
