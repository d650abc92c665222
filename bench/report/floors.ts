/**
 * Each row against the floor of its scenario's request (scenarios/floor.ts), from the parts
 * measured in the same run (runner/floors.ts): the floor in µs and Tessera's CPU per request as a
 * multiple of it. On Redis both sides count redis-server: Tessera's server µs + Redis µs against a
 * floor that includes the store commands' ioredis client and redis-server CPU.
 */
import { storeCommandName, type RequestFloor } from '../scenarios/floor.js';
import type { ContenderResult, FloorBreakdown, FloorComponents, FloorPart, FloorRow, ScenarioFloor } from './results.js';

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
  const excludedUs = declared.excludes === undefined ? 0 : components.hashUs;
  return { parts, signUs, verifyUs, httpUs, storeUs, excludedUs };
}

/**
 * Tessera's rows (and a baseline's) against the floor. A row measured under a background load is
 * left out (its CPU is the load's too), and so is a row whose figures or floor part are missing.
 */
export function floorRows(contenders: readonly ContenderResult[], breakdown: FloorBreakdown): FloorRow[] {
  const rows: FloorRow[] = [];
  if (breakdown.excludedUs === null) return rows;
  for (const contender of contenders) {
    if ((contender.kind !== 'tessera' && contender.kind !== 'baseline') || contender.background !== undefined) continue;
    const serverUs = contender.summary?.serverUsPerRequest ?? null;
    if (serverUs === null) continue;
    const onRedis = contender.store === 'redis';
    const redisUs = onRedis ? (contender.summary?.storeUsPerRequest ?? null) : 0;
    const storeFloorUs = onRedis ? breakdown.storeUs : 0;
    if (redisUs === null || storeFloorUs === null) continue;
    const floorUs = breakdown.signUs + breakdown.verifyUs + breakdown.httpUs + storeFloorUs;
    const figureUs = serverUs + redisUs - breakdown.excludedUs;
    rows.push({ contender: contender.id, floorUs, figureUs, multiple: figureUs / floorUs });
  }
  return rows;
}

/** The scenario's floor in this run and its rows (none without the parts); null without a declared floor. */
export function scenarioFloor(
  declared: RequestFloor | undefined,
  contenders: readonly ContenderResult[],
  components: FloorComponents | null | undefined,
): ScenarioFloor | null {
  if (declared === undefined) return null;
  const breakdown = components == null ? null : floorBreakdown(declared, components);
  return { declared, breakdown, rows: breakdown === null ? [] : floorRows(contenders, breakdown) };
}

/** µs as the floor lines and the bars print them: one decimal under 100, whole with separators above. */
export const us = (value: number): string => (Math.abs(value) < 100 ? value.toFixed(1) : Math.round(value).toLocaleString('en-US'));

/**
 * Whether a row has a multiple to print and judge. Taken minus work measured apart (the password's
 * hash), a figure at or below zero is a difference of two noisy figures, the excluded part's spread
 * larger than all the rest of the request, not a cost.
 */
export function hasMultiple(row: FloorRow): boolean {
  return row.figureUs > 0;
}

function formatPart(part: FloorPart): string {
  const count = part.count === 1 ? '' : `${Number.isInteger(part.count) ? part.count : part.count.toFixed(2)} × `;
  return `${count}${part.name} ${us(part.us)}`;
}

/** The line below a table: what the floor is made of, each part's µs in this run. */
export function formatFloor(floor: ScenarioFloor): string {
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
  return line;
}

/** A row's two table cells: its floor in µs and its multiple. */
export function floorCells(row: FloorRow | undefined): [string, string] {
  if (row === undefined) return ['–', '–'];
  return [us(row.floorUs), hasMultiple(row) ? `${row.multiple.toFixed(2)}x` : 'n/a'];
}
