/**
 * The project's own import graph, read from the source text: which file imports which, and
 * whether only types. Type-only imports count: they vanish at run time, but a cycle through them
 * still means two files that cannot be understood (or moved) one without the other.
 *
 * Only relative specifiers are followed (`./x.js` resolves to `x.ts` when that exists); packages
 * and computed dynamic imports (`import(url)`) are not edges.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

export interface ImportEdge {
  /** Repository-relative path with `/`, e.g. `bench/report/results.ts`. */
  to: string;
  /** `import type`, `export type`, `typeof import()`, or every named specifier marked `type`. */
  typeOnly: boolean;
}

/** Repository-relative source file → the project files it imports. */
export type ImportGraph = ReadonlyMap<string, readonly ImportEdge[]>;

const sourceFile = /\.(ts|mts|mjs|js)$/;
const clause = String.raw`(?:[\w$]+\s*,\s*)?(?:\*\s+as\s+[\w$]+|\{[^}]*\}|[\w$]+)`;
const specifier = String.raw`['"]([^'"]+)['"]`;
/** Each pattern's last group is the specifier. */
const patterns: readonly { regex: RegExp; typeOnly: (match: RegExpMatchArray) => boolean }[] = [
  // import x from '…', import { a, type B } from '…', import type { A } from '…', import * as ns from '…'
  { regex: new RegExp(String.raw`^[ \t]*import\s+(type\s+)?(${clause})\s*from\s*${specifier}`, 'gm'), typeOnly: typeOnlyClause },
  // export * from '…', export { a } from '…', export type { A } from '…'
  {
    regex: new RegExp(String.raw`^[ \t]*export\s+(type\s+)?(\*(?:\s+as\s+[\w$]+)?|\{[^}]*\})\s*from\s*${specifier}`, 'gm'),
    typeOnly: typeOnlyClause,
  },
  // import '…', for its side effects
  { regex: new RegExp(String.raw`^[ \t]*import\s*${specifier}`, 'gm'), typeOnly: () => false },
  // import('…'), and typeof import('…') in a type
  { regex: new RegExp(String.raw`(typeof\s+)?\bimport\(\s*${specifier}\s*\)`, 'g'), typeOnly: (match) => match[1] !== undefined },
];

/** `type` before the clause, or before every name in `{ … }`. */
function typeOnlyClause(match: RegExpMatchArray): boolean {
  if (match[1] !== undefined) return true;
  const names = /^\{([^}]*)\}$/.exec(match[2] ?? '')?.[1];
  if (names === undefined) return false;
  const specifiers = names
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  return specifiers.length > 0 && specifiers.every((s) => s.startsWith('type '));
}

/** The relative specifiers a module imports, in source order. */
export function importSpecifiers(source: string): { specifier: string; typeOnly: boolean }[] {
  const found: { at: number; specifier: string; typeOnly: boolean }[] = [];
  for (const { regex, typeOnly } of patterns) {
    for (const match of source.matchAll(regex)) {
      const specifier = match[match.length - 1] as string;
      if (specifier.startsWith('.')) found.push({ at: match.index ?? 0, specifier, typeOnly: typeOnly(match) });
    }
  }
  return found.sort((a, b) => a.at - b.at).map(({ specifier, typeOnly }) => ({ specifier, typeOnly }));
}

function listSources(root: string, entry: string): string[] {
  const full = path.join(root, entry);
  if (!existsSync(full)) return [];
  if (!statSync(full).isDirectory()) return sourceFile.test(entry) ? [entry] : [];
  return readdirSync(full).flatMap((name) => (name === 'node_modules' ? [] : listSources(root, path.posix.join(entry, name))));
}

/** `./x.js` from `dir/a.ts` → `dir/x.ts` when the TypeScript source exists, else `dir/x.js`. */
function resolveSpecifier(root: string, from: string, specifier: string): string {
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
  for (const [compiled, source] of [
    ['.js', '.ts'],
    ['.mjs', '.mts'],
  ] as const) {
    if (target.endsWith(compiled)) {
      const candidate = target.slice(0, -compiled.length) + source;
      if (existsSync(path.join(root, candidate))) return candidate;
    }
  }
  return target;
}

/** The import graph of the source files under `entries` (folders or files, relative to `root`). */
export function readImportGraph(root: string, entries: readonly string[]): ImportGraph {
  const graph = new Map<string, ImportEdge[]>();
  for (const file of entries.flatMap((entry) => listSources(root, entry))) {
    const imports = importSpecifiers(readFileSync(path.join(root, file), 'utf8'));
    graph.set(
      file,
      imports.map(({ specifier, typeOnly }) => ({ to: resolveSpecifier(root, file, specifier), typeOnly })),
    );
  }
  return graph;
}

/**
 * Every group of files that import each other round in a circle (a strongly connected component
 * of the graph, Tarjan's algorithm), each given as one cycle through it: `[a, b, c, a]`.
 */
export function findImportCycles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file) as number);
    stack.push(file);
    onStack.add(file);
    for (const { to } of graph.get(file) ?? []) {
      if (!graph.has(to)) continue;
      if (!index.has(to)) {
        visit(to);
        low.set(file, Math.min(low.get(file) as number, low.get(to) as number));
      } else if (onStack.has(to)) {
        low.set(file, Math.min(low.get(file) as number, index.get(to) as number));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    const selfImport = graph.get(file)?.some((edge) => edge.to === file) === true;
    if (component.length > 1 || selfImport) components.push(component);
  };
  for (const file of [...graph.keys()].sort()) if (!index.has(file)) visit(file);
  return components.map((component) => cycleThrough(graph, new Set(component)));
}

/** The shortest cycle from the component's first file (alphabetically) back to itself. */
function cycleThrough(graph: ImportGraph, component: ReadonlySet<string>): string[] {
  const start = [...component].sort()[0] as string;
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift() as string;
    for (const { to } of graph.get(file) ?? []) {
      if (to === start) {
        const cycle = [start];
        for (let at = file; at !== start; at = previous.get(at) as string) cycle.splice(1, 0, at);
        return [...cycle, start];
      }
      if (component.has(to) && !previous.has(to)) {
        previous.set(to, file);
        queue.push(to);
      }
    }
  }
  throw new Error(`no cycle through ${start}`);
}
