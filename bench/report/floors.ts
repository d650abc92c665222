/**
 * Each row against the floor of its scenario's request (scenarios/floor.ts), from the parts
 * measured in the same run (runner/floors.ts): the floor in µs and Tessera's CPU per request as a
 * multiple of it. On Redis both sides count redis-server: Tessera's server µs + Redis µs against a
 * floor that includes the store commands' ioredis client and redis-server CPU.
 *
 * Two floors, both printed (issue 33): the old one (issue 18: signatures, verifications, the bare
 * request, on Redis the store commands) and the new one, which adds what the fixed design cannot
 * avoid: one bare batch hand-off per request (the workers sign, so every request crosses two
 * threads) at the batch size the row's gateway reported in that round, and on the memory store
 * its store commands through the thread bridge. The bars judge the new one (report/bars.ts).
 */
import { storeCommandName, type RequestFloor } from '../scenarios/floor.js';
import { median, medianOrNull } from '../support/stats.js';
import type {
  BridgeCommandCost,
  ContenderBridge,
  ContenderHandoff,
  ContenderResult,
  CryptoCost,
  FloorBreakdown,
  FloorComponents,
  FloorComponentsRound,
  FloorPart,
  FloorRound,
  FloorRow,
  ScenarioFloor,
  StoreCommandCost,
} from './results.js';

/** The floor's parts in µs, or null when a part it needs was not measured (the bare request, an algorithm). */
export function floorBreakdown(declared: RequestFloor, components: FloorComponents): FloorBreakdown | null {
  if (components.http === null) return null;
  const parts: FloorPart[] = [];
  const crypto = (what: 'sign' | 'verify', counts: RequestFloor['signatures']): number | null => {
    let total = 0;
    for (const [alg, count] of Object.entries(counts)) {
      if (count === undefined || count === 0) continue;
      const cost = components.crypto.find((c) => c.alg === alg);
      if (cost === undefined) return null;
      const each = what === 'sign' ? cost.jwtSignUs : cost.verifyUs;
      parts.push({ name: `${alg} ${what === 'sign' ? 'JWT' : 'verification'}`, count, us: count * each, redisOnly: false });
      total += count * each;
    }
    return total;
  };
  const signUs = crypto('sign', declared.signatures);
  const verifyUs = crypto('verify', declared.verifications);
  if (signUs === null || verifyUs === null) return null;
  const httpUs = components.http.usPerRequest;
  parts.push({ name: 'bare uWS POST', count: 1, us: httpUs, redisOnly: false });
  let storeUs: number | null = 0;
  for (const { command, count } of declared.store) {
    const name = storeCommandName(command);
    const cost = components.store.find((c) => c.name === name);
    if (cost === undefined || cost.redisUs === null) {
      storeUs = null;
      continue;
    }
    const each = cost.clientUs + cost.redisUs;
    parts.push({ name, count, us: count * each, redisOnly: true });
    if (storeUs !== null) storeUs += count * each;
  }
  const excludedUs =
    declared.excludes === undefined ? 0 : declared.excludes === 'argon2id-verify' ? components.hashUs : (components.cheapHashUs ?? null);
  const handoffUs: Record<string, number> = {};
  for (const h of components.handoff ?? []) handoffUs[h.contender] = h.usPerRequest;
  const bridgeUs: Record<string, number> = {};
  for (const { contender, commands } of components.bridge ?? []) {
    const total = bridgeFloorUs(declared, commands);
    if (total !== null) bridgeUs[contender] = total;
  }
  return { parts, signUs, verifyUs, httpUs, storeUs, excludedUs, handoffUs, bridgeUs };
}

/** The declared store commands through the bridge, µs per request; null when one was not measured. */
export function bridgeFloorUs(declared: RequestFloor, commands: readonly BridgeCommandCost[]): number | null {
  let total = 0;
  for (const { command, count } of declared.store) {
    const cost = commands.find((c) => c.name === storeCommandName(command));
    if (cost === undefined) return null;
    total += count * cost.us;
  }
  return total;
}

/** Server and Redis µs per request, as a summary or one round has them. */
interface CpuPerRequest {
  serverUsPerRequest: number | null;
  storeUsPerRequest: number | null;
}

/** A row's floors and figure against one breakdown. */
export interface FloorPair {
  /** The old floor. */
  floorUs: number;
  figureUs: number;
  /** The new floor: the old + the hand-off + on memory the bridge; null when one of those was not measured. */
  newFloorUs: number | null;
  handoffUs: number | null;
  /** On the memory store, when the request sends store commands; else null. */
  bridgeUs: number | null;
}

/**
 * A row's floors and figure from one set of figures against one breakdown; null when a part of
 * the old floor is missing. On memory the store commands' bridge round trips join the new floor
 * (the records live on the gateway's main thread); on Redis the ioredis loop already counts them.
 */
export function floorAndFigure(
  contender: { id: string; store: ContenderResult['store'] },
  cpu: CpuPerRequest,
  breakdown: FloorBreakdown,
  declared: RequestFloor,
): FloorPair | null {
  const onRedis = contender.store === 'redis';
  const serverUs = cpu.serverUsPerRequest;
  const redisUs = onRedis ? cpu.storeUsPerRequest : 0;
  const storeFloorUs = onRedis ? breakdown.storeUs : 0;
  if (serverUs === null || redisUs === null || storeFloorUs === null || breakdown.excludedUs === null) return null;
  const floorUs = breakdown.signUs + breakdown.verifyUs + breakdown.httpUs + storeFloorUs;
  const handoffUs = breakdown.handoffUs?.[contender.id] ?? null;
  const needsBridge = contender.store === 'memory' && declared.store.length > 0;
  const bridgeUs = needsBridge ? (breakdown.bridgeUs?.[contender.id] ?? null) : null;
  const newFloorUs = handoffUs === null || (needsBridge && bridgeUs === null) ? null : floorUs + handoffUs + (bridgeUs ?? 0);
  return { floorUs, figureUs: serverUs + redisUs - breakdown.excludedUs, newFloorUs, handoffUs, bridgeUs };
}

/** A row's fields from one pair. */
function rowOf(contender: string, pair: FloorPair): FloorRow {
  return {
    contender,
    floorUs: pair.floorUs,
    figureUs: pair.figureUs,
    multiple: pair.figureUs / pair.floorUs,
    newFloorUs: pair.newFloorUs,
    newMultiple: pair.newFloorUs === null ? null : pair.figureUs / pair.newFloorUs,
    handoffUs: pair.handoffUs,
    bridgeUs: pair.bridgeUs,
  };
}

/** The rows a floor judges: Tessera's and a baseline's, each alone (under a background load its CPU is the load's too). */
function judgedContenders(contenders: readonly ContenderResult[]): ContenderResult[] {
  return contenders.filter((c) => (c.kind === 'tessera' || c.kind === 'baseline') && c.background === undefined);
}

/**
 * Tessera's rows (and a baseline's) against the floor. A row measured under a background load is
 * left out (its CPU is the load's too), and so is a row whose figures or floor part are missing.
 */
export function floorRows(contenders: readonly ContenderResult[], breakdown: FloorBreakdown, declared: RequestFloor): FloorRow[] {
  const rows: FloorRow[] = [];
  for (const contender of judgedContenders(contenders)) {
    if (contender.summary === null) continue;
    const pair = floorAndFigure(contender, contender.summary, breakdown, declared);
    if (pair === null) continue;
    rows.push(rowOf(contender.id, pair));
  }
  return rows;
}

/**
 * The median of each part over the rounds: the floor a scenario prints when its parts were
 * measured in every round. A part some round lacks is taken from the rounds that have it.
 */
export function medianComponents(rounds: readonly FloorComponents[]): FloorComponents {
  const crypto = new Map<string, CryptoCost[]>();
  const store = new Map<string, StoreCommandCost[]>();
  for (const round of rounds) {
    for (const cost of round.crypto) crypto.set(cost.alg, [...(crypto.get(cost.alg) ?? []), cost]);
    for (const cost of round.store) store.set(cost.name, [...(store.get(cost.name) ?? []), cost]);
  }
  const https = rounds.map((r) => r.http).filter((h) => h !== null);
  const first = https[0];
  return {
    crypto: [...crypto.values()].map((costs) => ({
      alg: (costs[0] as CryptoCost).alg,
      jwtSignUs: median(costs.map((c) => c.jwtSignUs)),
      signUs: median(costs.map((c) => c.signUs)),
      verifyUs: median(costs.map((c) => c.verifyUs)),
    })),
    http:
      first === undefined
        ? null
        : { usPerRequest: median(https.map((h) => h.usPerRequest)), rps: median(https.map((h) => h.rps)), source: first.source },
    store: [...store.values()].map((costs) => ({
      ...(costs[0] as StoreCommandCost),
      commands: costs.reduce((sum, c) => sum + c.commands, 0),
      clientUs: median(costs.map((c) => c.clientUs)),
      redisUs: medianOrNull(costs.map((c) => c.redisUs)),
    })),
    hashUs: medianOrNull(rounds.map((r) => r.hashUs)),
    cheapHashUs: medianOrNull(rounds.map((r) => r.cheapHashUs ?? null)),
    handoff: medianHandoffs(rounds.flatMap((r) => r.handoff ?? [])),
    bridge: medianBridges(rounds.flatMap((r) => r.bridge ?? [])),
  };
}

/** Per contender, the median of its rounds' hand-offs. */
function medianHandoffs(all: readonly ContenderHandoff[]): ContenderHandoff[] {
  const by = new Map<string, ContenderHandoff[]>();
  for (const h of all) by.set(h.contender, [...(by.get(h.contender) ?? []), h]);
  return [...by.entries()].map(([contender, hs]) => ({
    contender,
    batch: median(hs.map((h) => h.batch)),
    size: median(hs.map((h) => h.size)),
    tasks: hs.reduce((sum, h) => sum + h.tasks, 0),
    usPerTask: median(hs.map((h) => h.usPerTask)),
    usPerRequest: median(hs.map((h) => h.usPerRequest)),
  }));
}

/** Per contender and command, the median of its rounds' bridge costs. */
function medianBridges(all: readonly ContenderBridge[]): ContenderBridge[] {
  const by = new Map<string, Map<string, BridgeCommandCost[]>>();
  for (const { contender, commands } of all) {
    const mine = by.get(contender) ?? new Map<string, BridgeCommandCost[]>();
    for (const c of commands) mine.set(c.name, [...(mine.get(c.name) ?? []), c]);
    by.set(contender, mine);
  }
  return [...by.entries()].map(([contender, commands]) => ({
    contender,
    commands: [...commands.values()].map((costs) => ({
      ...(costs[0] as BridgeCommandCost),
      commands: costs.reduce((sum, c) => sum + c.commands, 0),
      perTurn: median(costs.map((c) => c.perTurn)),
      us: median(costs.map((c) => c.us)),
    })),
  }));
}

/**
 * Each row against the floor measured in each of its rounds: a VM that slows down or speeds up
 * during a run moves both sides of a round alike. The row's multiple is the median of its
 * rounds'; its floor and figure are the medians of theirs.
 */
export function floorRowsByRound(
  declared: RequestFloor,
  contenders: readonly ContenderResult[],
  rounds: readonly FloorComponentsRound[],
): FloorRow[] {
  const breakdowns = new Map<number, FloorBreakdown>();
  for (const { round, components } of rounds) {
    const breakdown = floorBreakdown(declared, components);
    if (breakdown !== null) breakdowns.set(round, breakdown);
  }
  const rows: FloorRow[] = [];
  for (const contender of judgedContenders(contenders)) {
    const perRound: FloorRound[] = [];
    const parts: { handoffUs: number | null; bridgeUs: number | null }[] = [];
    for (const measured of contender.rounds) {
      const breakdown = breakdowns.get(measured.round);
      if (!measured.valid || breakdown === undefined) continue;
      const pair = floorAndFigure(contender, measured.cpu, breakdown, declared);
      if (pair === null) continue;
      const { newFloorUs, newMultiple, handoffUs, bridgeUs, ...old } = rowOf(contender.id, pair);
      perRound.push({
        round: measured.round,
        floorUs: old.floorUs,
        figureUs: old.figureUs,
        multiple: old.multiple,
        newFloorUs,
        newMultiple,
      });
      parts.push({ handoffUs: handoffUs ?? null, bridgeUs: bridgeUs ?? null });
    }
    if (perRound.length === 0) continue;
    const figures = perRound.map((r) => r.figureUs);
    const figureUs = median(figures);
    // The password's rounds, minus a 14 ms hash, left 28 µs in one round and 707 µs in the other
    // (2026-11-26 06:50): a median of such rounds is no cost of the request's own work.
    const undetermined = declared.excludes !== undefined && Math.max(...figures) - Math.min(...figures) > figureUs;
    // The new floor from the rounds that measured its parts; a round without them leaves it out.
    const newRounds = perRound.filter((r) => r.newFloorUs != null && r.newMultiple != null);
    rows.push({
      contender: contender.id,
      floorUs: median(perRound.map((r) => r.floorUs)),
      figureUs,
      multiple: median(perRound.map((r) => r.multiple)),
      perRound,
      newFloorUs: newRounds.length === 0 ? null : median(newRounds.map((r) => r.newFloorUs as number)),
      newMultiple: newRounds.length === 0 ? null : median(newRounds.map((r) => r.newMultiple as number)),
      handoffUs: medianOrNull(parts.map((p) => p.handoffUs)),
      bridgeUs: medianOrNull(parts.map((p) => p.bridgeUs)),
      ...(undetermined ? { undetermined } : {}),
    });
  }
  return rows;
}

/**
 * The scenario's floor in this run and its rows (none without the parts); null without a declared
 * floor. With the parts measured in each round, the rows are judged round by round
 * ({@link floorRowsByRound}) and the breakdown printed is the rounds' median; else against the run's.
 */
export function scenarioFloor(
  declared: RequestFloor | undefined,
  contenders: readonly ContenderResult[],
  components: FloorComponents | null | undefined,
  rounds: readonly FloorComponentsRound[] = [],
): ScenarioFloor | null {
  if (declared === undefined) return null;
  if (rounds.length > 0) {
    const breakdown = floorBreakdown(declared, medianComponents(rounds.map((r) => r.components)));
    return { declared, breakdown, rows: breakdown === null ? [] : floorRowsByRound(declared, contenders, rounds), rounds: [...rounds] };
  }
  const breakdown = components == null ? null : floorBreakdown(declared, components);
  return { declared, breakdown, rows: breakdown === null ? [] : floorRows(contenders, breakdown, declared) };
}

/** µs as the floor lines and the bars print them: one decimal under 100, whole with separators above. */
export const us = (value: number): string => (Math.abs(value) < 100 ? value.toFixed(1) : Math.round(value).toLocaleString('en-US'));

/**
 * Whether a row has a multiple to print and judge. Taken minus work measured apart (the password's
 * hash), a figure at or below zero is a difference of two noisy figures, the excluded part's spread
 * larger than all the rest of the request, not a cost; so is one whose rounds spread wider than
 * their median ({@link FloorRow.undetermined}).
 */
export function hasMultiple(row: FloorRow): boolean {
  return row.figureUs > 0 && row.undetermined !== true;
}

/** Whether a row has a multiple of the new floor: {@link hasMultiple}, and its hand-off (and bridge) measured. */
export function hasNewMultiple(row: FloorRow): row is FloorRow & { newFloorUs: number; newMultiple: number } {
  return hasMultiple(row) && row.newFloorUs != null && row.newMultiple != null;
}

function formatPart(part: FloorPart): string {
  const count = part.count === 1 ? '' : `${Number.isInteger(part.count) ? part.count : part.count.toFixed(2)} × `;
  return `${count}${part.name} ${us(part.us)}`;
}

/**
 * The lines below a table: what the old floor is made of, each part's µs in this run (the rounds'
 * median when it was measured in each round, followed by each row's multiple round by round), then
 * the new floor of each row: the old + its bare batch hand-off (+ on memory its bridge round trips).
 */
export function formatFloor(floor: ScenarioFloor, labelOf: (id: string) => string = (id) => id): string {
  const b = floor.breakdown;
  if (b === null) return 'Floor: not measured in this run (the bare request or an algorithm is missing)';
  const base = b.signUs + b.verifyUs + b.httpUs;
  let line = `Old floor per request (this run, µs): ${b.parts
    .filter((p) => !p.redisOnly)
    .map(formatPart)
    .join(' + ')} = **${us(base)}**`;
  if (floor.declared.store.length > 0) {
    line +=
      b.storeUs === null
        ? '; on Redis: the store commands were not measured in this run'
        : `; on Redis + ${b.parts
            .filter((p) => p.redisOnly)
            .map(formatPart)
            .join(' + ')} (ioredis + redis-server) = **${us(base + b.storeUs)}**`;
  }
  if (floor.declared.excludes !== undefined) {
    line +=
      b.excludedUs === null
        ? `; ${floor.declared.excludes} not measured: no multiple`
        : `; Tessera's figure minus one ${floor.declared.excludes} (${us(b.excludedUs)} µs in this run)`;
  }
  const newParts = floor.rows.map((row) => {
    const label = labelOf(row.contender);
    if (row.newFloorUs == null) return `${label}: not measured (its hand-off, or on memory its bridge, was not measured in any round)`;
    const bridge = row.bridgeUs == null ? '' : ` + bridge ${us(row.bridgeUs)}`;
    return `${label}: old ${us(row.floorUs)} + hand-off ${us(row.handoffUs ?? 0)}${bridge} = **${us(row.newFloorUs)}**`;
  });
  if (newParts.length > 0)
    line += `\n- New floor per request (the old + one bare batch hand-off at the row's batch size; on memory + its store commands through the bridge), rounds' median: ${newParts.join('; ')}`;
  if (floor.rounds !== undefined && floor.rounds.length > 0) {
    const byRound = floor.rows
      .filter((row) => row.perRound !== undefined && row.perRound.length > 0)
      .map(
        (row) =>
          `${labelOf(row.contender)} ${row
            .perRound!.map((r) =>
              r.newMultiple == null ? `${r.multiple.toFixed(2)}x old` : `${r.newMultiple.toFixed(2)}x (old ${r.multiple.toFixed(2)}x)`,
            )
            .join(' · ')}`,
      );
    line += `\n- Floors measured in each round (the old one's parts before its contenders, the hand-off and bridge after them, at the batch size each gateway reported in that round)${
      byRound.length === 0
        ? ''
        : `; each round's figure over that round's floor: ${byRound.join('; ')} (the row's multiple is their median)`
    }`;
  }
  return line;
}

/** A row's four table cells: its new floor in µs and multiple, then the old floor's. */
export function floorCells(row: FloorRow | undefined): [string, string, string, string] {
  if (row === undefined) return ['–', '–', '–', '–'];
  const newFloor = row.newFloorUs == null ? '–' : us(row.newFloorUs);
  const newMultiple = row.newFloorUs == null ? '–' : hasNewMultiple(row) ? `${row.newMultiple.toFixed(2)}x` : 'n/a';
  return [newFloor, newMultiple, us(row.floorUs), hasMultiple(row) ? `${row.multiple.toFixed(2)}x` : 'n/a'];
}
