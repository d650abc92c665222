/**
 * The dependency rules of the house (docs/architecture.md, "Dependency rules"), checked against
 * the real import graph by test/architecture/import_boundaries.test.ts. There is no allow list:
 * a module both threads need lives in `core/`, a message between them in `wire/`.
 *
 * - `gateway/` (the uWS thread) imports, outside itself, `core/` and `wire/` only.
 * - `workers/` (the Piscina threads) imports, outside itself, `core/` and `wire/` only.
 * - `core/` (what both threads run) imports nothing outside `core/`.
 * - `wire/` (what crosses between the threads) loads nothing but itself at run time; `import type`
 *   may name `core/` types (the config a worker boots with, a store's type).
 * - `validator.ts` (`tessera/validator`) exports the validator API from `core/` only.
 * - `validators/` imports `tessera/validator`, Node's built-ins, npm packages and its own helper
 *   modules: nothing of Tessera's internals.
 * - `gateway/` keeps no source file at its root: each is in a room (`endpoints/`, `dispatch/` …).
 *
 * Type-only imports count for every rule but the `wire/` one: a type names the module it comes
 * from, and a room that needs another room's types depends on it.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { readImportGraph, type ImportEdge } from './import_graph.js';

/** One import (or file) that breaks a rule. */
export interface Violation {
  readonly file: string;
  readonly line: number;
  readonly specifier: string;
  readonly rule: string;
}

export function formatViolation(v: Violation): string {
  return v.specifier === '' ? `${v.file}: ${v.rule}` : `${v.file}:${v.line} imports '${v.specifier}': ${v.rule}`;
}

export const rules = {
  gatewayImports: 'gateway/ imports, outside itself, core/ and wire/ only',
  workersImport: 'workers/ imports, outside itself, core/ and wire/ only',
  coreImports: 'core/ imports nothing outside core/',
  wireImports: 'wire/ loads nothing but itself at run time (import type may name core/)',
  validatorEntryImports: 'validator.ts (tessera/validator) exports from core/ only',
  validatorsImport: "validators/ import 'tessera/validator', node built-ins, npm packages and their own helpers only",
  gatewayRoot: 'gateway/ keeps no source file at its root: put it in a room',
} as const;

/** The top folder of a repository path (`gateway`, `core` …), or the file itself at the root. */
const roomOf = (file: string): string => file.split('/')[0] as string;

/** The rule an import breaks, if any. */
function brokenRule(edge: ImportEdge): string | undefined {
  const { from, target } = edge;
  const to = target.kind === 'file' ? target.path : undefined;
  const fromRoom = roomOf(from);
  const toRoom = to === undefined ? undefined : roomOf(to);
  switch (fromRoom) {
    case 'gateway':
      return toRoom === undefined || ['gateway', 'core', 'wire'].includes(toRoom) ? undefined : rules.gatewayImports;
    case 'workers':
      return toRoom === undefined || ['workers', 'core', 'wire'].includes(toRoom) ? undefined : rules.workersImport;
    case 'core':
      return toRoom === undefined || toRoom === 'core' ? undefined : rules.coreImports;
    case 'wire':
      if (toRoom === undefined || toRoom === 'wire' || (toRoom === 'core' && edge.typeOnly)) return undefined;
      return rules.wireImports;
    case 'validators':
      return to !== undefined && to !== 'validator.ts' && toRoom !== 'validators' ? rules.validatorsImport : undefined;
    case 'validator.ts':
      return toRoom === 'core' ? undefined : rules.validatorEntryImports;
    default:
      return undefined;
  }
}

/** Source files directly in `gateway/`, outside every room. */
function filesAtGatewayRoot(root: string): Violation[] {
  const dir = path.join(root, 'gateway');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => /\.(ts|mts|js|mjs)$/.test(name) && !statSync(path.join(dir, name)).isDirectory())
    .sort()
    .map((name) => ({ file: `gateway/${name}`, line: 0, specifier: '', rule: rules.gatewayRoot }));
}

/** Every import under `root` that breaks a dependency rule, and every file outside a room. */
export function checkImportBoundaries(root: string): Violation[] {
  const violations: Violation[] = [];
  for (const edge of readImportGraph(root)) {
    const rule = brokenRule(edge);
    if (rule !== undefined) violations.push({ file: edge.from, line: edge.line, specifier: edge.specifier, rule });
  }
  return [...violations, ...filesAtGatewayRoot(root)];
}
