/**
 * The import graph of Tessera's sources, read from the files themselves: every `import … from`,
 * `import '…'`, `export … from` and `import('…')` with a literal specifier. The installed
 * TypeScript (7, the native compiler) has no JavaScript parser API, so a small tokenizer finds
 * them: it skips comments, strings, template literals and regular expressions, so that an import
 * written inside a comment, a string or a test's inline module source is not taken for one.
 */
import { readdirSync, readFileSync, existsSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';

/** One import statement of a file. */
export interface ImportRef {
  /** The module specifier as written. */
  readonly specifier: string;
  /** 1-based line of the specifier. */
  readonly line: number;
  /** `import type …` or `export type … from`: erased from the JavaScript, loads nothing at run time. */
  readonly typeOnly: boolean;
}

/** Where an import leads, relative to the scanned root (POSIX separators). */
export type ImportTarget =
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'builtin' }
  | { readonly kind: 'package'; readonly name: string };

/** An import of a scanned file with its resolved target. */
export interface ImportEdge extends ImportRef {
  /** The importing file, relative to the root. */
  readonly from: string;
  readonly target: ImportTarget;
}

/** The folders and entry files whose imports are checked. */
export const scannedFolders = ['gateway', 'core', 'wire', 'workers', 'validators'] as const;
export const scannedEntries = ['index.ts', 'validator.ts'] as const;

// The package's own entries: what `'tessera'` and `'tessera/validator'` resolve to (package.json
// `exports`, and tsconfig.json `paths` when the TypeScript sources run).
const selfReferences: Readonly<Record<string, string>> = { tessera: 'index.ts', 'tessera/validator': 'validator.ts' };

const sourceFile = /\.(ts|mts|js|mjs)$/;

/** Every import of every scanned file under `root`. */
export function readImportGraph(root: string): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const file of listSourceFiles(root)) {
    for (const ref of readImports(readFileSync(path.join(root, file), 'utf8'))) {
      edges.push({ ...ref, from: file, target: resolveImport(root, file, ref.specifier) });
    }
  }
  return edges;
}

function listSourceFiles(root: string): string[] {
  const files: string[] = scannedEntries.filter((entry) => existsSync(path.join(root, entry)));
  const walk = (dir: string): void => {
    for (const name of readdirSync(path.join(root, dir)).sort()) {
      const relative = `${dir}/${name}`;
      if (statSync(path.join(root, relative)).isDirectory()) walk(relative);
      else if (sourceFile.test(name) && !/\.d\.m?ts$/.test(name)) files.push(relative);
    }
  };
  for (const folder of scannedFolders) if (existsSync(path.join(root, folder))) walk(folder);
  return files;
}

/** Resolves a specifier the way NodeNext does for these sources (`.js` names the `.ts` file). */
export function resolveImport(root: string, from: string, specifier: string): ImportTarget {
  const self = selfReferences[specifier];
  if (self !== undefined) return { kind: 'file', path: self };
  if (specifier.startsWith('./') || specifier.startsWith('../')) {
    const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
    const source = resolved.replace(/\.js$/, '.ts').replace(/\.mjs$/, '.mts');
    return { kind: 'file', path: existsSync(path.join(root, source)) ? source : resolved };
  }
  if (specifier.startsWith('node:') || builtinModules.includes(specifier.split('/')[0] as string)) return { kind: 'builtin' };
  const parts = specifier.split('/');
  return { kind: 'package', name: specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string) };
}

interface Token {
  readonly kind: 'word' | 'string' | 'template' | 'regex' | 'punct';
  readonly text: string;
  readonly line: number;
}

/** The imports of one module's source text. */
export function readImports(source: string): ImportRef[] {
  const tokens = tokenize(source);
  const refs: ImportRef[] = [];
  const at = (index: number): Token | undefined => tokens[index];
  for (let k = 0; k < tokens.length; k++) {
    const token = tokens[k] as Token;
    if (token.kind !== 'word' || at(k - 1)?.text === '.') continue;
    if (token.text === 'import') {
      const next = at(k + 1);
      if (next === undefined || next.text === '.') continue; // import.meta
      if (next.text === '(') {
        const argument = at(k + 2);
        if (argument?.kind === 'string') refs.push({ specifier: argument.text, line: argument.line, typeOnly: false });
        continue;
      }
      if (next.kind === 'string') {
        refs.push({ specifier: next.text, line: next.line, typeOnly: false });
        continue;
      }
      // `import type X from`, `import type { … } from`: but `import type from '…'` imports a default named "type".
      const typeOnly = next.text === 'type' && at(k + 2)?.text !== 'from' && at(k + 2)?.text !== ',';
      const found = findFromClause(tokens, k + 1);
      if (found !== undefined) refs.push({ ...found, typeOnly });
    } else if (token.text === 'export') {
      let j = k + 1;
      const typeOnly = at(j)?.text === 'type';
      if (typeOnly) j++;
      if (at(j)?.text !== '*' && at(j)?.text !== '{') continue; // a declaration, not a re-export
      const found = findFromClause(tokens, j);
      if (found !== undefined) refs.push({ ...found, typeOnly });
    }
  }
  return refs;
}

/**
 * From the token after `import`/`export`: the `from '…'` that ends an import or re-export clause,
 * if the tokens before it are only what such a clause may hold (names, braces, `*`, commas).
 */
function findFromClause(tokens: readonly Token[], start: number): { specifier: string; line: number } | undefined {
  for (let j = start; j < tokens.length; j++) {
    const token = tokens[j] as Token;
    if (token.kind === 'word' && token.text === 'from' && tokens[j + 1]?.kind === 'string') {
      const specifier = tokens[j + 1] as Token;
      return { specifier: specifier.text, line: specifier.line };
    }
    const partOfClause = token.kind === 'word' || (token.kind === 'punct' && '{},*'.includes(token.text));
    if (!partOfClause) return undefined;
  }
  return undefined;
}

// After these words an expression starts, so a `/` opens a regular expression; after any other
// word (a name, a number, `this`) it divides.
const wordsBeforeExpression = new Set([
  'return',
  'typeof',
  'instanceof',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'case',
  'do',
  'else',
  'yield',
  'await',
]);

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  // Open `{` and template `${`: a `}` closes the innermost, and after a `${` the template resumes.
  const braces: ('{' | '${')[] = [];
  let i = 0;
  let line = 1;
  const advance = (to: number): void => {
    for (; i < to; i++) if (source[i] === '\n') line++;
  };
  const regexMayStart = (): boolean => {
    const previous = tokens.at(-1);
    if (previous === undefined) return true;
    if (previous.kind === 'word') return wordsBeforeExpression.has(previous.text);
    if (previous.kind === 'punct') return !')]}'.includes(previous.text);
    return false;
  };
  // Scans template text from `i` (just after "`" or a closing `}`) to the end or to the next `${`.
  const scanTemplate = (): void => {
    const startLine = line;
    while (i < source.length) {
      const c = source[i];
      if (c === '\\') advance(i + 2);
      else if (c === '`') {
        advance(i + 1);
        break;
      } else if (c === '$' && source[i + 1] === '{') {
        advance(i + 2);
        braces.push('${');
        break;
      } else advance(i + 1);
    }
    tokens.push({ kind: 'template', text: '', line: startLine });
  };

  while (i < source.length) {
    const c = source[i] as string;
    const startLine = line;
    if (c === '\n' || c === ' ' || c === '\t' || c === '\r') {
      advance(i + 1);
    } else if (c === '/' && source[i + 1] === '/') {
      const end = source.indexOf('\n', i);
      advance(end === -1 ? source.length : end);
    } else if (c === '/' && source[i + 1] === '*') {
      const end = source.indexOf('*/', i + 2);
      advance(end === -1 ? source.length : end + 2);
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      let text = '';
      while (j < source.length && source[j] !== c && source[j] !== '\n') {
        if (source[j] === '\\') {
          text += source[j + 1] ?? '';
          j += 2;
        } else text += source[j++];
      }
      advance(j + 1);
      tokens.push({ kind: 'string', text, line: startLine });
    } else if (c === '`') {
      advance(i + 1);
      scanTemplate();
    } else if (c === '}' && braces.at(-1) === '${') {
      braces.pop();
      advance(i + 1);
      scanTemplate();
    } else if (c === '/' && regexMayStart()) {
      let j = i + 1;
      let inClass = false;
      while (j < source.length && source[j] !== '\n') {
        const r = source[j];
        if (r === '\\') j += 2;
        else if (r === '[') (inClass = true), j++;
        else if (r === ']') (inClass = false), j++;
        else if (r === '/' && !inClass) break;
        else j++;
      }
      j++;
      while (j < source.length && /[a-z]/.test(source[j] as string)) j++;
      advance(j);
      tokens.push({ kind: 'regex', text: '', line: startLine });
    } else if (/[\w$\u0080-\uffff]/.test(c)) {
      let j = i + 1;
      while (j < source.length && /[\w$\u0080-\uffff]/.test(source[j] as string)) j++;
      tokens.push({ kind: 'word', text: source.slice(i, j), line: startLine });
      advance(j);
    } else {
      if (c === '{') braces.push('{');
      else if (c === '}') braces.pop();
      tokens.push({ kind: 'punct', text: c, line: startLine });
      advance(i + 1);
    }
  }
  return tokens;
}
