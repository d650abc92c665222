/**
 * What one contender is sent: the kinds of request of its scenario (or peer), with their
 * supplies turned into feed files for the load generator.
 *
 * - A fixed kind is replayed as is.
 * - A `once` supply (refresh tokens, codes) is made fresh for every run, warm-up included, sized
 *   from the rate the contender reached so far: `rate × seconds × share × margin`, plus what the
 *   connections hold in flight. If it still runs out, the load generator stops and the run is
 *   invalid (`exhausted`), never silently replayed.
 * - A `cycle` supply (pending device codes) is made once, at start, and each run continues where
 *   the previous one stopped, so that no item comes round again sooner than a full turn.
 * - The deep checks before and after each run use items of their own, made on the spot.
 */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { LoadKind, LoadRequest, LoadResult } from '../load/load_generator.js';
import type { RequestKind, ServerAccess } from '../scenarios/scenario.js';

/**
 * Extra items beyond the estimate for a `once` supply. Unused items stay in the store until their
 * TTL, so a wide margin would also grow the memory store between rounds.
 */
const margin = 1.2;
/** Distinct items of a `cycle` supply when the scenario does not say. */
const defaultCycleSize = 50_000;

interface Cycle {
  file: string;
  count: number;
  start: number;
}

/** The feed files of one run; `finish` records how far cycles got and removes the rest. */
export interface RunLoad {
  kinds: LoadKind[];
  /** Items made for this run (0 when nothing is consumed). */
  made: number;
  finish(result: LoadResult | null): void;
}

let fileSequence = 0;

function writeLines(dir: string, label: string, lines: readonly string[]): string {
  for (const line of lines) {
    if (line.length === 0 || /[\t\r\n]/.test(line)) throw new Error(`${label}: a request body must be one non-empty line`);
  }
  const file = path.join(dir, `feed-${label.replace(/\W+/g, '_')}-${++fileSequence}.txt`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

export class Workload {
  private constructor(
    readonly kinds: readonly RequestKind[],
    private readonly server: ServerAccess,
    private readonly dir: string,
    private readonly label: string,
    private readonly connections: number,
    private readonly cycles: Map<string, Cycle>,
  ) {}

  /** Makes the `cycle` supplies; `once` supplies are made per run. */
  static async prepare(
    kinds: readonly RequestKind[],
    server: ServerAccess,
    options: { dir: string; label: string; connections: number },
  ): Promise<Workload> {
    if (kinds.length === 0) throw new Error('a workload needs at least one kind of request');
    const names = new Set<string>();
    for (const kind of kinds) {
      if (names.has(kind.name)) throw new Error(`two kinds named ${kind.name}`);
      names.add(kind.name);
    }
    const cycles = new Map<string, Cycle>();
    for (const kind of kinds) {
      if (kind.supply?.mode !== 'cycle') continue;
      const count = kind.supply.size ?? defaultCycleSize;
      const bodies = await kind.supply.make(count, server);
      cycles.set(kind.name, { file: writeLines(options.dir, `${options.label}-${kind.name}`, bodies), count: bodies.length, start: 0 });
    }
    return new Workload(kinds, server, options.dir, options.label, options.connections, cycles);
  }

  /** Whether runs consume items that must be made for each of them. */
  get consumes(): boolean {
    return this.kinds.some((kind) => kind.supply?.mode === 'once');
  }

  /** The feeds of one run of `seconds` at about `rps` requests per second. */
  async forRun(seconds: number, rps: number): Promise<RunLoad> {
    const totalWeight = this.kinds.reduce((sum, kind) => sum + kind.weight, 0);
    const kinds: LoadKind[] = [];
    const files: string[] = [];
    let made = 0;
    try {
      for (const kind of this.kinds) {
        const base: LoadKind = { name: kind.name, weight: kind.weight, request: kind.request, expect: kind.expect };
        const supply = kind.supply;
        if (supply === undefined) {
          kinds.push(base);
        } else if (supply.mode === 'cycle') {
          const cycle = this.cycles.get(kind.name) as Cycle;
          kinds.push({ ...base, feed: { file: cycle.file, count: cycle.count, mode: 'cycle', start: cycle.start } });
        } else {
          const share = kind.weight / totalWeight;
          const count = Math.ceil(rps * seconds * share * margin) + 2 * this.connections + 100;
          const bodies = await supply.make(count, this.server);
          const file = writeLines(this.dir, `${this.label}-${kind.name}`, bodies);
          files.push(file);
          made += bodies.length;
          kinds.push({ ...base, feed: { file, count: bodies.length, mode: 'once', start: 0 } });
        }
      }
    } catch (err) {
      for (const file of files) rmSync(file, { force: true });
      throw err;
    }
    return {
      kinds,
      made,
      finish: (result) => {
        for (const file of files) rmSync(file, { force: true });
        if (result === null) return;
        for (const counted of result.kinds) {
          const cycle = this.cycles.get(counted.name);
          if (cycle !== undefined) cycle.start = (cycle.start + counted.taken) % cycle.count;
        }
      },
    };
  }

  /** One request of each kind for the deep check, fed kinds with an item made for it. */
  async checks(): Promise<{ kind: RequestKind; request: LoadRequest }[]> {
    const checks: { kind: RequestKind; request: LoadRequest }[] = [];
    for (const kind of this.kinds) {
      if (kind.supply === undefined) {
        checks.push({ kind, request: kind.request });
        continue;
      }
      const [body] = await kind.supply.make(1, this.server);
      if (body === undefined) throw new Error(`${kind.name}: the supply made nothing`);
      checks.push({ kind, request: { ...kind.request, body } });
    }
    return checks;
  }

  /** Removes the cycle files. */
  close(): void {
    for (const cycle of this.cycles.values()) rmSync(cycle.file, { force: true });
  }
}
