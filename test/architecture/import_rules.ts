/**
 * The dependency rules of the thread boundary (docs/architecture.md, "Dependency rules"), checked
 * against the real import graph by test/architecture/import_boundaries.test.ts.
 *
 * - `workers/` never imports `gateway/` (nor the package root, which loads the gateway).
 * - `gateway/` imports `workers/` only through `workers/protocol/` (the contract between the
 *   threads) and the short list below of modules the gateway runs itself, on purpose.
 * - `workers/protocol/` loads nothing from outside itself at run time (type-only imports may name
 *   worker types), so importing the contract never drags worker code onto the gateway thread.
 * - `validator.ts` (`tessera/validator`) exports the validator API from `workers/protocol/` only.
 * - `validators/` imports `tessera/validator`, Node's built-ins, npm packages and its own helper
 *   modules: nothing of Tessera's internals.
 */
import { readImportGraph, type ImportEdge } from './import_graph.js';

/** A worker module (or folder, ending in `/`) that the gateway may import, and why. */
export interface AllowedWorkerModule {
  readonly module: string;
  readonly why: string;
}

/**
 * Worker modules the gateway thread runs itself. Anything else the gateway needs from the worker
 * side belongs in `workers/protocol/`.
 */
export const gatewayMayImport: readonly AllowedWorkerModule[] = [
  {
    module: 'workers/store/',
    why: 'the gateway opens the same store as the workers (pages, throttles, device authorization, development keys) and serves the in-memory one to them',
  },
  {
    module: 'core/crypto/password_hash.ts',
    why: 'the CLI hashes passwords (hash-password) and config validation checks the hash format the workers verify',
  },
  {
    module: 'core/crypto/client_secret.ts',
    why: 'the CLI prints the stored form of a client secret (hash-secret)',
  },
  {
    module: 'core/rules/scope_rules.ts',
    why: 'the authorize and device pages, device authorization and discovery apply the same scope rules as the grants',
  },
  {
    module: 'core/rules/scope_narrowing.ts',
    why: 'the authorize endpoint and device authorization read the scope and resource parameters (RFC 8707) as the grants do',
  },
  {
    module: 'core/rules/acr_values.ts',
    why: 'the login page reads acr_values (idp, tenant) as the password grant does',
  },
  {
    module: 'core/rules/pkce.ts',
    why: 'the authorize endpoint checks the code challenge that the code grant verifies',
  },
  {
    module: 'workers/grants/registry.ts',
    why: 'the gateway checks grant modules before the workers load them, and lists the built-in grant types it routes',
  },
  {
    module: 'core/records/authorization_code_record.ts',
    why: 'the authorize page writes the code record the code grant redeems',
  },
  {
    module: 'core/records/device_code_record.ts',
    why: 'device authorization and the device page write the records the device code grant redeems',
  },
  {
    module: 'core/records/refresh_token_handle.ts',
    why: 'codes issued by the pages carry the grant family of the tokens redeemed from them',
  },
  {
    module: 'workers/tokens/id_token.ts',
    why: 'discovery lists the claims the ID token builder can issue',
  },
  {
    module: 'core/typescript_loader.ts',
    why: 'the gateway imports TypeScript validator modules to check them before the workers load them',
  },
];

/** One import that breaks a rule. */
export interface Violation {
  readonly file: string;
  readonly line: number;
  readonly specifier: string;
  readonly rule: string;
}

export function formatViolation(v: Violation): string {
  return `${v.file}:${v.line} imports '${v.specifier}': ${v.rule}`;
}

const rules = {
  workersImportGateway: 'workers/ never imports gateway/ (nor the package root, which loads it)',
  gatewayImportsWorkerInternals:
    'gateway/ imports workers/ only through workers/protocol/ or a module of the allowlist in test/architecture/import_rules.ts',
  protocolLoadsWorkerCode: 'workers/protocol/ loads nothing from outside itself at run time (import type only)',
  validatorEntryImportsBeyondProtocol: 'validator.ts (tessera/validator) exports from workers/protocol/ only',
  validatorImportsInternals: "validators/ import 'tessera/validator', node built-ins, npm packages and their own helpers only",
} as const;

/** Whether `module` (a path relative to the root) is covered by an allowlist entry. */
export function allowlistEntryOf(
  module: string,
  allowlist: readonly AllowedWorkerModule[] = gatewayMayImport,
): AllowedWorkerModule | undefined {
  return allowlist.find((entry) => (entry.module.endsWith('/') ? module.startsWith(entry.module) : module === entry.module));
}

/** The rule an import breaks, if any. */
function brokenRule(edge: ImportEdge, allowlist: readonly AllowedWorkerModule[]): string | undefined {
  const { from, target } = edge;
  const to = target.kind === 'file' ? target.path : undefined;
  if (from.startsWith('workers/') && to !== undefined && (to.startsWith('gateway/') || to === 'index.ts'))
    return rules.workersImportGateway;
  if (
    from.startsWith('gateway/') &&
    to?.startsWith('workers/') &&
    !to.startsWith('workers/protocol/') &&
    allowlistEntryOf(to, allowlist) === undefined
  ) {
    return rules.gatewayImportsWorkerInternals;
  }
  if (from.startsWith('workers/protocol/') && to !== undefined && !to.startsWith('workers/protocol/') && !edge.typeOnly)
    return rules.protocolLoadsWorkerCode;
  if (from === 'validator.ts' && (to === undefined || !to.startsWith('workers/protocol/')))
    return rules.validatorEntryImportsBeyondProtocol;
  if (from.startsWith('validators/') && to !== undefined && to !== 'validator.ts' && !to.startsWith('validators/'))
    return rules.validatorImportsInternals;
  return undefined;
}

/** Every import under `root` that breaks a dependency rule. */
export function checkImportBoundaries(root: string, allowlist: readonly AllowedWorkerModule[] = gatewayMayImport): Violation[] {
  const violations: Violation[] = [];
  for (const edge of readImportGraph(root)) {
    const rule = brokenRule(edge, allowlist);
    if (rule !== undefined) violations.push({ file: edge.from, line: edge.line, specifier: edge.specifier, rule });
  }
  return violations;
}
