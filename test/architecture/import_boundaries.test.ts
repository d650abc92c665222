// The dependency rules of the thread boundary (test/architecture/import_rules.ts,
// docs/architecture.md), checked against the imports the sources really have.
import t from 'tap';
import { fileURLToPath } from 'node:url';
import { readImportGraph, readImports } from './import_graph.js';
import { allowlistEntryOf, checkImportBoundaries, formatViolation, gatewayMayImport } from './import_rules.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

t.test('the sources keep the dependency rules', async (t) => {
  t.same(checkImportBoundaries(repoRoot).map(formatViolation), [], 'no import breaks a rule');
});

t.test('every module of the allowlist is one the gateway still imports', async (t) => {
  const imported = readImportGraph(repoRoot)
    .filter((edge) => edge.from.startsWith('gateway/') && edge.target.kind === 'file')
    .map((edge) => (edge.target.kind === 'file' ? edge.target.path : ''));
  const unused = gatewayMayImport.filter((entry) => !imported.some((module) => allowlistEntryOf(module, [entry]) !== undefined));
  t.same(
    unused.map((entry) => entry.module),
    [],
    'an entry nothing imports any more is removed from the list',
  );
});

t.test('reports each import that breaks a rule, with its file and line', async (t) => {
  const root = t.testdir({
    'validator.ts': ["export * from './workers/protocol/contract.js';", "export { startGateway } from './gateway/server.js';"].join('\n'),
    gateway: {
      'server.ts': [
        "import { step } from '../workers/grants/secret_step.js';",
        "import type { Contract } from '../workers/protocol/contract.js';",
        "import { openStore } from '../workers/store/store.js';",
        'export const startGateway = () => [step, openStore] as unknown as Contract;',
      ].join('\n'),
    },
    workers: {
      grants: { 'secret_step.ts': "import type { Config } from '../../gateway/config.js';\nexport const step = (c: Config) => c;" },
      tokens: { 'late.ts': "export const load = () => import('../../gateway/start/server.js');" },
      protocol: {
        'contract.ts': [
          "import type { Config } from '../../gateway/config.js';",
          "import { step } from '../grants/secret_step.js';",
          'export type Contract = typeof step;',
        ].join('\n'),
        'types_only.ts': "import type { step } from '../grants/secret_step.js';\nexport type Step = typeof step;",
      },
      store: { 'store.ts': 'export const openStore = () => ({});' },
    },
    validators: {
      'good.ts': [
        "import { readFile } from 'node:fs/promises';",
        "import { Client } from 'ldapts';",
        "import { GrantValidationResult } from 'tessera/validator';",
        "import { shared } from './_shared.js';",
      ].join('\n'),
      '_shared.ts': 'export const shared = 1;',
      'bad.ts': ["import { createTessera } from 'tessera';", "import { OAuthError } from '../workers/protocol/oauth_errors.js';"].join(
        '\n',
      ),
    },
  });
  t.same(checkImportBoundaries(root).map(formatViolation).sort(), [
    "gateway/start/server.ts:1 imports '../workers/grants/secret_step.js': gateway/ imports workers/ only through workers/protocol/ or a module of the allowlist in test/architecture/import_rules.ts",
    "validator.ts:2 imports './gateway/server.js': validator.ts (tessera/validator) exports from workers/protocol/ only",
    "validators/bad.ts:1 imports 'tessera': validators/ import 'tessera/validator', node built-ins, npm packages and their own helpers only",
    "validators/bad.ts:2 imports '../workers/protocol/oauth_errors.js': validators/ import 'tessera/validator', node built-ins, npm packages and their own helpers only",
    "workers/grants/secret_step.ts:1 imports '../../gateway/config.js': workers/ never imports gateway/ (nor the package root, which loads it)",
    "workers/protocol/contract.ts:1 imports '../../gateway/config.js': workers/ never imports gateway/ (nor the package root, which loads it)",
    "workers/protocol/contract.ts:2 imports '../grants/secret_step.js': workers/protocol/ loads nothing from outside itself at run time (import type only)",
    "workers/tokens/late.ts:1 imports '../../gateway/server.js': workers/ never imports gateway/ (nor the package root, which loads it)",
  ]);
});

t.test('reads import statements, not text that looks like one', async (t) => {
  const source = [
    "import { a, type B } from './a.js';", // 1
    "import type { C } from './c.js';", // 2
    "import type from './named_type.js';", // 3: a default import named "type"
    "import './side_effect.js';", // 4
    'import * as all from', // 5
    "  './all.js';", // 6
    "export { d } from './d.js';", // 7
    "export type { E } from './e.js';", // 8
    "export * from './f.js';", // 9
    "const later = await import('./later.js');", // 10
    "// import x from './comment.js';", // 11
    "/* export * from './block_comment.js'; */", // 12
    'const text = "import y from \'./string.js\'";', // 13
    "const template = `import z from './template.js' ${'nested'} export * from './after.js'`;", // 14
    'const pattern = /from \'.\\/regex"/g;', // 15
    "const ratio = later.length / 2; const other = 'from'; export const url = import.meta.url;", // 16
    "const dict = { import: 1, from: './not_an_import.js' };", // 17
  ].join('\n');
  t.same(readImports(source), [
    { specifier: './a.js', line: 1, typeOnly: false },
    { specifier: './c.js', line: 2, typeOnly: true },
    { specifier: './named_type.js', line: 3, typeOnly: false },
    { specifier: './side_effect.js', line: 4, typeOnly: false },
    { specifier: './all.js', line: 6, typeOnly: false },
    { specifier: './d.js', line: 7, typeOnly: false },
    { specifier: './e.js', line: 8, typeOnly: true },
    { specifier: './f.js', line: 9, typeOnly: false },
    { specifier: './later.js', line: 10, typeOnly: false },
  ]);
});
