// The dependency rules of the house (test/architecture/import_rules.ts, docs/architecture.md),
// checked against the imports the sources really have.
import t from 'tap';
import { fileURLToPath } from 'node:url';
import { readImports } from './import_graph.js';
import { checkImportBoundaries, formatViolation, rules } from './import_rules.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

t.test('the sources keep the dependency rules', async (t) => {
  t.same(checkImportBoundaries(repoRoot).map(formatViolation), [], 'no import breaks a rule, no file sits at the gateway root');
});

t.test('reports each import that breaks a rule, with its file and line', async (t) => {
  const root = t.testdir({
    'validator.ts': ["export * from './core/validator_api.js';", "export { startGateway } from './gateway/start/server.js';"].join('\n'),
    'index.ts': "export * from './validator.js';",
    gateway: {
      'stray.ts': 'export const stray = 1;',
      start: {
        'server.ts': [
          "import { step } from '../../workers/grants/secret_step.js';",
          "import type { TaskItem } from '../../wire/token_task.js';",
          "import { openStore } from '../../core/store/store.js';",
          "import { routes } from '../endpoints/routes.js';",
          "import { version } from '../../index.js';",
          'export const startGateway = () => [step, openStore, routes, version] as unknown as TaskItem;',
        ].join('\n'),
      },
      endpoints: { 'routes.ts': 'export const routes = [];' },
    },
    workers: {
      grants: {
        'secret_step.ts': [
          "import type { Config } from '../../gateway/config/load.js';",
          "import { openStore } from '../../core/store/store.js';",
          "import type { TaskItem } from '../../wire/token_task.js';",
          "import { createTessera } from 'tessera';",
          'export const step = (c: Config, i: TaskItem) => [c, i, openStore, createTessera];',
        ].join('\n'),
      },
      tokens: { 'late.ts': "export const load = () => import('../../gateway/start/server.js');" },
    },
    core: {
      'validator_api.ts': "import { step } from '../workers/grants/secret_step.js';\nexport const api = step;",
      rules: {
        'scope_rules.ts': [
          "import type { TaskItem } from '../../wire/token_task.js';",
          "import type { Config } from '../../gateway/config/load.js';",
          "import { OAuthErrors } from '../oauth_errors.js';",
          'export type Rules = [TaskItem, Config, typeof OAuthErrors];',
        ].join('\n'),
      },
      'oauth_errors.ts': 'export const OAuthErrors = {};',
      store: { 'store.ts': 'export const openStore = () => ({});' },
    },
    wire: {
      'token_task.ts': [
        "import type { Rules } from '../core/rules/scope_rules.js';",
        "import { OAuthErrors } from '../core/oauth_errors.js';",
        "import type { step } from '../workers/grants/secret_step.js';",
        "import { rerun } from './rerun.js';",
        'export type TaskItem = [Rules, typeof OAuthErrors, typeof step, typeof rerun];',
      ].join('\n'),
      'rerun.ts': 'export const rerun = () => true;',
    },
    validators: {
      'good.ts': [
        "import { readFile } from 'node:fs/promises';",
        "import { Client } from 'ldapts';",
        "import { GrantValidationResult } from 'tessera/validator';",
        "import { shared } from './_shared.js';",
      ].join('\n'),
      '_shared.ts': 'export const shared = 1;',
      'bad.ts': ["import { createTessera } from 'tessera';", "import { OAuthError } from '../core/oauth_errors.js';"].join('\n'),
    },
  });
  const violations = checkImportBoundaries(root);
  t.same(violations.map(formatViolation).sort(), [
    `core/rules/scope_rules.ts:1 imports '../../wire/token_task.js': ${rules.coreImports}`,
    `core/rules/scope_rules.ts:2 imports '../../gateway/config/load.js': ${rules.coreImports}`,
    `core/validator_api.ts:1 imports '../workers/grants/secret_step.js': ${rules.coreImports}`,
    `gateway/start/server.ts:1 imports '../../workers/grants/secret_step.js': ${rules.gatewayImports}`,
    `gateway/start/server.ts:5 imports '../../index.js': ${rules.gatewayImports}`,
    `gateway/stray.ts: ${rules.gatewayRoot}`,
    `validator.ts:2 imports './gateway/start/server.js': ${rules.validatorEntryImports}`,
    `validators/bad.ts:1 imports 'tessera': ${rules.validatorsImport}`,
    `validators/bad.ts:2 imports '../core/oauth_errors.js': ${rules.validatorsImport}`,
    `wire/token_task.ts:2 imports '../core/oauth_errors.js': ${rules.wireImports}`,
    `wire/token_task.ts:3 imports '../workers/grants/secret_step.js': ${rules.wireImports}`,
    `workers/grants/secret_step.ts:1 imports '../../gateway/config/load.js': ${rules.workersImport}`,
    `workers/grants/secret_step.ts:4 imports 'tessera': ${rules.workersImport}`,
    `workers/tokens/late.ts:1 imports '../../gateway/start/server.js': ${rules.workersImport}`,
  ]);
  const broken = new Set(violations.map((v) => v.rule));
  t.same(
    Object.values(rules).filter((rule) => !broken.has(rule)),
    [],
    'every rule has a breaking import in the fixture, so none can silently stop firing',
  );
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
