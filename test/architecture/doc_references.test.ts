// Comments cite the RFCs or the repository's own documents, never a file that is not in the
// repository (docs/architecture.md). This reads every source and test file and fails on a citation
// of the external contract ("SPEC §n") and on a cited `docs/…`, `README.md` or `…/README.md` path
// that does not exist; the README's and docs' relative links must resolve too, and the source files
// docs/architecture.md and docs/lifecycle.md name must exist.
import t from 'tap';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const sourceFolders = ['gateway', 'core', 'wire', 'workers', 'validators', 'bench', 'test'];
const sourceFile = /\.(ts|mts|mjs|js)$/;

function filesUnder(dir: string, keep: RegExp): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...filesUnder(full, keep));
    else if (keep.test(name)) out.push(full);
  }
  return out;
}

interface Finding {
  file: string;
  line: number;
  text: string;
}

/** `SPEC §n` citations (the shared contract outside the repository). */
export function specCitations(file: string, source: string): Finding[] {
  const found: Finding[] = [];
  source.split('\n').forEach((text, i) => {
    if (/\bSPEC\s*§/.test(text)) found.push({ file, line: i + 1, text: text.trim() });
  });
  return found;
}

/** Repository paths cited in comments or docs (`docs/x.md`, `validators/README.md`, …) that do not exist. */
export function missingCitedDocs(file: string, source: string, repoRoot: string): Finding[] {
  const found: Finding[] = [];
  source.split('\n').forEach((text, i) => {
    for (const match of text.matchAll(/\b((?:docs|validators|bench)\/[\w./-]*\.md)\b/g)) {
      const cited = match[1] as string;
      if (!existsSync(path.join(repoRoot, cited))) found.push({ file, line: i + 1, text: cited });
    }
  });
  return found;
}

/** Source paths (`gateway/x.ts`, `wire/y.ts`, …) a document names that do not exist. */
export function missingCitedSources(file: string, source: string, repoRoot: string): Finding[] {
  const found: Finding[] = [];
  source.split('\n').forEach((text, i) => {
    for (const match of text.matchAll(/\b((?:gateway|workers|core|wire|validators|test)\/[\w./-]*\.(?:ts|mts|mjs))\b/g)) {
      const cited = match[1] as string;
      if (!existsSync(path.join(repoRoot, cited))) found.push({ file, line: i + 1, text: cited });
    }
  });
  return found;
}

/** The documents that say where the code lives: every source path they name must exist. */
const codeMaps = ['docs/architecture.md', 'docs/lifecycle.md'];

/** Relative Markdown links (`[x](docs/y.md#z)`) whose file does not exist. */
export function brokenMarkdownLinks(file: string, source: string): Finding[] {
  const found: Finding[] = [];
  source.split('\n').forEach((text, i) => {
    for (const match of text.matchAll(/\]\(([^)#\s]+)(?:#[^)\s]*)?\)/g)) {
      const target = match[1] as string;
      if (/^[a-z]+:/i.test(target)) continue; // http:, https:, mailto:
      if (!existsSync(path.resolve(path.dirname(file), target))) found.push({ file, line: i + 1, text: target });
    }
  });
  return found;
}

const show = (findings: Finding[]): string[] => findings.map((f) => `${path.relative(root, f.file)}:${f.line}: ${f.text}`);

t.test('the checks fire on a synthetic bad file', async (t) => {
  t.same(show(specCitations(path.join(root, 'x.ts'), '/** Bodies (SPEC §4). */')), ['x.ts:1: /** Bodies (SPEC §4). */']);
  t.same(show(missingCitedDocs(path.join(root, 'x.ts'), '// see docs/nowhere.md', root)), ['x.ts:1: docs/nowhere.md']);
  t.same(show(missingCitedDocs(path.join(root, 'x.ts'), '// see docs/storage.md', root)), []);
  t.same(show(brokenMarkdownLinks(path.join(root, 'README.md'), '[a](docs/nowhere.md#x) [b](https://x.test/y.md)')), [
    'README.md:1: docs/nowhere.md',
  ]);
  t.same(show(missingCitedSources(path.join(root, 'docs', 'x.md'), '`gateway/nowhere.ts` and `wire/token_task.ts`', root)), [
    'docs/x.md:1: gateway/nowhere.ts',
  ]);
});

t.test('the architecture and lifecycle documents name only source files that exist', async (t) => {
  const missing = codeMaps.flatMap((doc) => missingCitedSources(path.join(root, doc), readFileSync(path.join(root, doc), 'utf8'), root));
  t.same(show(missing), []);
});

t.test('no source or test file cites a file outside the repository', async (t) => {
  const files = sourceFolders.flatMap((dir) => filesUnder(path.join(root, dir), sourceFile));
  files.push(...['index.ts', 'validator.ts'].map((f) => path.join(root, f)));
  t.ok(files.length > 100, `read ${files.length} files`);
  // This file's own examples are the bad citations the first test feeds the checks.
  const self = fileURLToPath(import.meta.url);
  const others = files.filter((f) => f !== self);
  const spec = others.flatMap((f) => specCitations(f, readFileSync(f, 'utf8')));
  t.same(show(spec), [], 'cite docs/ or an RFC, not SPEC');
  const missing = others.flatMap((f) => missingCitedDocs(f, readFileSync(f, 'utf8'), root));
  t.same(show(missing), [], 'every cited document exists');
});

t.test('the README and docs/ link only to files that exist', async (t) => {
  const markdown = [
    path.join(root, 'README.md'),
    ...filesUnder(path.join(root, 'docs'), /\.md$/),
    path.join(root, 'validators', 'README.md'),
    path.join(root, 'bench', 'README.md'),
  ];
  const broken = markdown.flatMap((f) => brokenMarkdownLinks(f, readFileSync(f, 'utf8')));
  t.same(show(broken), []);
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
  for (const doc of ['configuration', 'endpoints', 'storage', 'operations', 'validators', 'architecture', 'lifecycle']) {
    t.match(readme, `docs/${doc}.md`, `the README links docs/${doc}.md`);
  }
});
