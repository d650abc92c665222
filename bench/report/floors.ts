/**
 * Each row against the floor of its scenario's request (scenarios/floor.ts), from the parts
 * measured in the same run (runner/floors.ts): the floor in µs and Tessera's CPU per request as a
 * multiple of it. On Redis both sides count redis-server: Tessera's server µs + Redis µs against a
 * floor that includes the store commands' ioredis client and redis-server CPU.
 */
import { storeCommandName, type RequestFloor } from '../scenarios/floor.js';
import { median, medianOrNull } from '../support/stats.js';
import type {
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
  return { parts, signUs, verifyUs, httpUs, storeUs, excludedUs };
}

/** Server and Redis µs per request, as a summary or one round has them. */
interface CpuPerRequest {
  serverUsPerRequest: number | null;
  storeUsPerRequest: number | null;
}

/** A row's floor and figure from one set of figures against one breakdown; null when a part is missing. */
function floorAndFigure(onRedis: boolean, cpu: CpuPerRequest, breakdown: FloorBreakdown): { floorUs: number; figureUs: number } | null {
  const serverUs = cpu.serverUsPerRequest;
  const redisUs = onRedis ? cpu.storeUsPerRequest : 0;
  const storeFloorUs = onRedis ? breakdown.storeUs : 0;
  if (serverUs === null || redisUs === null || storeFloorUs === null || breakdown.excludedUs === null) return null;
  return {
    floorUs: breakdown.signUs + breakdown.verifyUs + breakdown.httpUs + storeFloorUs,
    figureUs: serverUs + redisUs - breakdown.excludedUs,
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
export function floorRows(contenders: readonly ContenderResult[], breakdown: FloorBreakdown): FloorRow[] {
  const rows: FloorRow[] = [];
  for (const contender of judgedContenders(contenders)) {
    if (contender.summary === null) continue;
    const pair = floorAndFigure(contender.store === 'redis', contender.summary, breakdown);
    if (pair === null) continue;
    rows.push({ contender: contender.id, ...pair, multiple: pair.figureUs / pair.floorUs });
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
  };
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
    for (const measured of contender.rounds) {
      const breakdown = breakdowns.get(measured.round);
      if (!measured.valid || breakdown === undefined) continue;
      const pair = floorAndFigure(contender.store === 'redis', measured.cpu, breakdown);
      if (pair !== null) perRound.push({ round: measured.round, ...pair, multiple: pair.figureUs / pair.floorUs });
    }
    if (perRound.length === 0) continue;
    const figures = perRound.map((r) => r.figureUs);
    const figureUs = median(figures);
    // The password's rounds, minus a 14 ms hash, left 28 µs in one round and 707 µs in the other
    // (2026-11-26 06:50): a median of such rounds is no cost of the request's own work.
    const undetermined = declared.excludes !== undefined && Math.max(...figures) - Math.min(...figures) > figureUs;
    rows.push({
      contender: contender.id,
      floorUs: median(perRound.map((r) => r.floorUs)),
      figureUs,
      multiple: median(perRound.map((r) => r.multiple)),
      perRound,
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
  return { declared, breakdown, rows: breakdown === null ? [] : floorRows(contenders, breakdown) };
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

function formatPart(part: FloorPart): string {
  const count = part.count === 1 ? '' : `${Number.isInteger(part.count) ? part.count : part.count.toFixed(2)} × `;
  return `${count}${part.name} ${us(part.us)}`;
}

/**
 * The line below a table: what the floor is made of, each part's µs in this run (the rounds'
 * median when it was measured in each round, followed by each row's multiple round by round).
 */
export function formatFloor(floor: ScenarioFloor, labelOf: (id: string) => string = (id) => id): string {
  const b = floor.breakdown;
  if (b === null) return 'Floor: not measured in this run (the bare request or an algorithm is missing)';
  const base = b.signUs + b.verifyUs + b.httpUs;
  let line = `Floor per request (this run, µs): ${b.parts
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
  if (floor.rounds !== undefined && floor.rounds.length > 0) {
    const byRound = floor.rows
      .filter((row) => row.perRound !== undefined && row.perRound.length > 0)
      .map((row) => `${labelOf(row.contender)} ${row.perRound!.map((r) => `${r.multiple.toFixed(2)}x`).join(' · ')}`);
    line += `\n- Floor measured in each round, before its contenders (the median above)${
      byRound.length === 0
        ? ''
        : `; each round's figure over that round's floor: ${byRound.join('; ')} (the row's multiple is their median)`
    }`;
  }
  return line;
}

/** A row's two table cells: its floor in µs and its multiple. */
export function floorCells(row: FloorRow | undefined): [string, string] {
  if (row === undefined) return ['–', '–'];
  return [us(row.floorUs), hasMultiple(row) ? `${row.multiple.toFixed(2)}x` : 'n/a'];
}
