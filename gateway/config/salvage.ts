/**
 * The part of a config that passes the schema, for the checks that need a schema-valid document
 * (cross references) when the whole does not: without it a config with a typo and an unknown
 * scope takes two runs of `tessera check-config` (or two restarts) to fix, one per stage.
 */
import type { z } from 'zod';
import type { ConfigProblem } from './config_error.js';
import { isPlainObject } from './plain_object.js';
import { configSchema, type TesseraConfig } from './schema.js';

/** A schema-valid document made from an invalid one, and how to read its problems' paths. */
export interface SalvagedConfig {
  readonly config: TesseraConfig;
  /**
   * The cross-reference problems that concern the original document: paths renumbered to its
   * array indices, and none at or under what the salvage removed (a dropped entry, a bad value
   * whose default stands in: those are reported by the schema already).
   */
  readonly keep: (problems: readonly ConfigProblem[]) => ConfigProblem[];
}

/** Rounds of repair; each removes what the previous parse complained about, one level higher if again. */
const maxRounds = 8;

/**
 * Removes what the schema refuses until the rest parses: an unknown field; a bad field of a
 * top-level list's entry or of a section (its default applies); an entry whose fields cannot be
 * repaired. Returns `undefined` when nothing usable is left (the root is not an object, a required
 * top-level field is bad).
 */
export function salvageConfig(raw: unknown, issues: readonly z.core.$ZodIssue[]): SalvagedConfig | undefined {
  if (!isPlainObject(raw)) return undefined;
  const doc: Record<string, unknown> = structuredClone(raw);
  // Top-level list entries are dropped through this map rather than spliced out, so that paths keep
  // the file's indices: section -> original indices still in.
  const kept = new Map<string, number[]>();
  // Paths (in the file's indices) whose value the salvage removed; `tainted`: those of bad values.
  const removed = new Set<string>();
  const tainted = new Set<string>();
  const view = (): Record<string, unknown> => {
    const copy: Record<string, unknown> = { ...doc };
    for (const [section, indices] of kept) copy[section] = indices.map((i) => (doc[section] as unknown[])[i]);
    return copy;
  };
  let current = issues;
  for (let round = 0; round < maxRounds; round++) {
    // The issues' indices are the view's at the start of the round, whatever this round drops.
    const viewed = new Map([...kept].map(([section, indices]) => [section, [...indices]]));
    for (const issue of current) {
      const keys = issue.code === 'unrecognized_keys' ? issue.keys.map((key) => [...issue.path, key]) : [issue.path];
      for (const path of keys) if (!repair(path, issue.code === 'unrecognized_keys', viewed)) return undefined;
    }
    const parsed = configSchema.safeParse(view());
    if (parsed.success) return { config: parsed.data, keep: (problems) => keepProblems(problems) };
    current = parsed.error.issues;
  }
  return undefined;

  /** Removes what `path` (in the view's indices) points at, or its container when that was done. */
  function repair(viewPath: readonly PropertyKey[], unknownField: boolean, viewed: ReadonlyMap<string, readonly number[]>): boolean {
    const [section, second] = viewPath;
    if (typeof section !== 'string') return false;
    const list = doc[section];
    if (Array.isArray(list) && typeof second === 'number') {
      const indices = kept.get(section) ?? list.map((_, i) => i);
      kept.set(section, indices);
      const original = (viewed.get(section) ?? indices)[second];
      if (original === undefined) return false;
      const entry = list[original];
      const field = viewPath[2];
      const fieldPath = `${section}[${original}].${String(field)}`;
      if (typeof field === 'string' && isPlainObject(entry) && !removed.has(fieldPath)) {
        delete entry[field];
        removed.add(fieldPath);
        if (!unknownField) tainted.add(fieldPath);
        return true;
      }
      const at = indices.indexOf(original);
      if (at !== -1) indices.splice(at, 1);
      tainted.add(`${section}[${original}]`);
      return true;
    }
    // A section (signing, store, ...): its bad field first, then the whole section.
    const sectionValue = doc[section];
    if (typeof second === 'string' && isPlainObject(sectionValue) && !removed.has(`${section}.${second}`)) {
      delete sectionValue[second];
      removed.add(`${section}.${second}`);
      if (!unknownField) tainted.add(`${section}.${second}`);
      return true;
    }
    if (section === 'issuer' || removed.has(section)) return false;
    delete doc[section];
    removed.add(section);
    tainted.add(section);
    return true;
  }

  function keepProblems(problems: readonly ConfigProblem[]): ConfigProblem[] {
    const out: ConfigProblem[] = [];
    for (const problem of problems) {
      const path = problem.path.replace(/^(\w+)\[(\d+)\]/, (whole, section: string, index: string) => {
        const original = kept.get(section)?.[Number(index)];
        return original === undefined ? whole : `${section}[${original}]`;
      });
      if ([...tainted].some((prefix) => path === prefix || path.startsWith(`${prefix}.`) || path.startsWith(`${prefix}[`))) continue;
      out.push({ path, message: problem.message });
    }
    return out;
  }
}
