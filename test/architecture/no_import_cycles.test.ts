import { fileURLToPath } from 'node:url';
import t from 'tap';
import { findImportCycles, importSpecifiers, readImportGraph } from '../helpers/import_graph.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
/** The project's code: the service, its validators, the bench, and the helpers tests and bench share. */
const checked = ['index.ts', 'gateway', 'core', 'wire', 'workers', 'validators', 'bench', 'test/helpers'];

t.test('no file of the project imports itself round a circle, type-only imports included', async (t) => {
  const graph = readImportGraph(repoRoot, checked);
  t.ok(
    graph.has('bench/run.ts') && graph.has('gateway/start/server.ts') && graph.has('workers/worker.ts'),
    'the graph covers bench, gateway and workers',
  );
  t.ok(
    graph.get('bench/run.ts')?.some((edge) => edge.to === 'bench/report/results.ts'),
    'the graph follows bench/run.ts to the results file it imports',
  );
  const cycles = findImportCycles(graph).map((cycle) => cycle.join(' -> '));
  t.same(cycles, [], cycles.length === 0 ? 'no cycles' : `import cycles:\n${cycles.join('\n')}`);
});

t.test('finds a cycle that a type-only import closes', async (t) => {
  const dir = t.testdir({
    'a.ts': "import { b } from './b.js';\nexport const a = b + 1;\n",
    'b.ts': "import type { C } from './c.js';\nexport const b: C = 1;\n",
    'c.ts': "import type { A } from './d.js';\nexport type C = number;\nexport type { A };\n",
    'd.ts': "export type { a as A } from './a.js';\n",
    'leaf.ts': "import { a } from './a.js';\nexport const leaf = a;\n",
  });
  t.same(findImportCycles(readImportGraph(dir, ['.'])), [['a.ts', 'b.ts', 'c.ts', 'd.ts', 'a.ts']]);
});

t.test('finds a module that imports itself, and none in a graph without cycles', async (t) => {
  const cyclic = t.testdir({ 'self.ts': "export * from './self.js';\n" });
  t.same(findImportCycles(readImportGraph(cyclic, ['.'])), [['self.ts', 'self.ts']]);
  const acyclic = t.testdir({
    'a.ts': "import './b.js';\n",
    'b.ts': "import { c } from './c.js';\nexport { c };\n",
    'c.ts': 'export const c = 1;\n',
  });
  t.same(findImportCycles(readImportGraph(acyclic, ['.'])), []);
});

t.test('reads every form of relative import, and which only bring types', async (t) => {
  const source = [
    "import a from './default.js';",
    "import * as ns from './namespace.js';",
    "import {\n  one,\n  type Two,\n} from './named.js';",
    "import { type Only, type Types } from './types_by_name.js';",
    "import type { T } from './types.js';",
    "import './side_effect.js';",
    "export * from './star.js';",
    "export type { U } from './reexported_type.js';",
    "type M = typeof import('./type_query.js');",
    "const lazy = await import('./lazy.js');",
    "import { readFileSync } from 'node:fs';",
    'const computed = await import(url);',
    '// import { commented } from "./not_an_import_at_line_start.js" is a comment, not an import',
  ].join('\n');
  t.same(importSpecifiers(source), [
    { specifier: './default.js', typeOnly: false },
    { specifier: './namespace.js', typeOnly: false },
    { specifier: './named.js', typeOnly: false },
    { specifier: './types_by_name.js', typeOnly: true },
    { specifier: './types.js', typeOnly: true },
    { specifier: './side_effect.js', typeOnly: false },
    { specifier: './star.js', typeOnly: false },
    { specifier: './reexported_type.js', typeOnly: true },
    { specifier: './type_query.js', typeOnly: true },
    { specifier: './lazy.js', typeOnly: false },
  ]);
});
