// Validator hot reload follows what a validator depends on (gateway/validators/validator_watcher.ts,
// validators/README.md "Hot reload"): a helper module beside it or in a subfolder of
// validatorsDir, and a data file it declares with `export const dataFiles`, outside the folder.
import t, { type Test } from 'tap';
import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { decodeJwt } from 'jose';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { sha256Secret, startTestGateway } from '../../helpers/test_gateway.js';

/** Stamps the token with the helper's `stamp` and the data file's `partner`, read in its constructor. */
const validator = `
import { readFileSync } from 'node:fs';
import { GrantValidationResult, type ExtensionGrantValidationContext, type ExtensionGrantValidator } from 'tessera/validator';
import { stamp } from './lib/stamp.ts';
import { suffix } from './_suffix.ts';

export const dataFiles = ['../data/partner.json'];

export default class Stamp implements ExtensionGrantValidator {
  readonly grantType = 'test_watched';
  private readonly partner = (JSON.parse(readFileSync(new URL('../data/partner.json', import.meta.url), 'utf8')) as { name: string }).name;
  async validate(context: ExtensionGrantValidationContext): Promise<void> {
    context.result = GrantValidationResult.success('alice', this.grantType, { claims: { stamp: stamp + suffix, partner: this.partner } });
  }
}
`;

const root = t.testdir({
  validators: {
    'watched.ts': validator,
    '_suffix.ts': "export const suffix = '';\n",
    lib: { 'stamp.ts': "export const stamp = 'one';\n" },
  },
  data: { 'partner.json': '{"name":"acme"}' },
});
const dir = path.join(root, 'validators');

const gw = await startTestGateway(t, {
  validatorsDir: dir,
  patch: (raw) => {
    (raw.clients as unknown[]).push({
      clientId: 'hot',
      clientSecrets: [{ value: sha256Secret('secret') }],
      allowedGrantTypes: ['test_watched'],
      allowedScopes: ['api1'],
    });
  },
});

async function claims(): Promise<{ stamp?: unknown; partner?: unknown }> {
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization('hot') },
    body: 'grant_type=test_watched',
  });
  const body = (await res.json()) as { access_token: string };
  return decodeJwt(body.access_token);
}

/** Makes the edit and waits for a reload that took effect (the watcher may report one edit twice). */
async function reloadAfter(t: Test, edit: () => void): Promise<void> {
  const deadline = Date.now() + 30_000;
  let next = gw.nextValidatorReload();
  edit();
  while (!(await Promise.race([next, new Promise<'late'>((r) => setTimeout(() => r('late'), deadline - Date.now()))]))) {
    next = gw.nextValidatorReload();
  }
  t.ok(Date.now() < deadline, 'a reload took effect');
}

t.test('serves what the helper and the data file say at start', async (t) => {
  t.match(await claims(), { stamp: 'one', partner: 'acme' });
});

t.test('a changed helper module in a subfolder reloads the validators', async (t) => {
  await reloadAfter(t, () => writeFileSync(path.join(dir, 'lib', 'stamp.ts'), "export const stamp = 'two';\n"));
  t.match(await claims(), { stamp: 'two', partner: 'acme' });
});

t.test('a changed helper beside the validator (not a validator itself) reloads them', async (t) => {
  await reloadAfter(t, () => writeFileSync(path.join(dir, '_suffix.ts'), "export const suffix = '+';\n"));
  t.match(await claims(), { stamp: 'two+' });
});

t.test('a changed data file the validator declares, outside validatorsDir, reloads them', async (t) => {
  await reloadAfter(t, () => writeFileSync(path.join(root, 'data', 'partner.json'), '{"name":"globex"}'));
  t.match(await claims(), { stamp: 'two+', partner: 'globex' });
});

t.test('hot reload goes on after a syntax error is fixed by reverting the file (edit, break, revert, edit)', async (t) => {
  const file = path.join(dir, 'watched.ts');
  const withMark = (mark: string): string => validator.replace('stamp: stamp + suffix', `stamp: stamp + suffix + '${mark}'`);
  await reloadAfter(t, () => writeFileSync(file, withMark('/a')));
  t.match(await claims(), { stamp: 'two+/a' }, 'edit: seen');

  const refused = gw.nextValidatorReload();
  writeFileSync(file, withMark('/a').replace("+ '/a'", "+ '/a' +"));
  t.equal(await refused, false, 'break: the reload is refused');
  t.match(await claims(), { stamp: 'two+/a' }, 'break: the previous validator stays');

  // `git checkout -- file` and an editor's safe save replace the file rather than write into it.
  await reloadAfter(t, () => {
    writeFileSync(path.join(root, 'watched.ts.tmp'), withMark('/a'));
    renameSync(path.join(root, 'watched.ts.tmp'), file);
  });
  t.match(await claims(), { stamp: 'two+/a' }, 'revert: seen');

  await reloadAfter(t, () => writeFileSync(file, withMark('/b')));
  t.match(await claims(), { stamp: 'two+/b' }, 'the edit after the revert: seen');
});
