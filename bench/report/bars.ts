/**
 * Issue 33's bars, judged on one run (bench/README.md, "Bars"): each says met, not met, or not
 * measured, with the figures it was judged on. They hold on a 2-vCPU machine in one interleaved
 * run, against the new floors (report/floors.ts: the old floor + one bare batch hand-off per
 * request + on the memory store the bridge round trips of its store commands); a partial run
 * judges what it measured.
 */
import type { BarResult, BenchResults, ContenderResult, FloorRow, ScenarioResult } from './results.js';
import { hasNewMultiple, us } from './floors.js';
import { contenderLabel, formatMs } from './table.js';
import { boundRpsOf, loadgenUsPerRequest } from './throughput_bound.js';
import { median } from '../support/stats.js';

/** client_credentials: CPU per request at most this multiple of its new floor, on every store. */
export const clientCredentialsMaxMultiple = 1.3;
/** Every other grant scenario: at most this multiple of its new floor, on both stores. */
export const grantMaxMultiple = 1.4;
/** The grant scenarios that bar covers, as issue 33 lists them. */
export const otherGrants = [
  'refresh_token',
  'authorization_code',
  'device_code',
  'delegation',
  'token_exchange',
  'introspection',
  'client_credentials_private_key_jwt',
];
/** The stores the floor bars ask for: both, where a scenario runs on both. */
export const barStores = ['memory', 'redis'] as const;
/** refresh_token on Redis: at least this multiple of node-oidc-provider on Redis, in req/s (the 5x of issue 18 retired). */
export const refreshMinPeerRatio = 3.5;
/** Audit events on: at most this much more CPU per client_credentials request than events off (1.1 = 10% more). */
export const eventsMaxRatio = 1.1;

const rps = (value: number): string => Math.round(value).toLocaleString('en-US');

function scenarioOf(results: BenchResults, name: string): ScenarioResult | undefined {
  return results.scenarios.find((s) => s.name === name);
}

function labelOf(scenario: ScenarioResult, id: string): string {
  const contender = scenario.contenders.find((c) => c.id === id);
  return contender === undefined ? id : contenderLabel(contender);
}

/**
 * The rows of Tessera the bars compare: one process, no background load, no events twin, the
 * checkout measured.
 */
function tesseraRows(scenario: ScenarioResult): ContenderResult[] {
  return scenario.contenders.filter(
    (c) => c.kind === 'tessera' && c.background === undefined && c.processes === undefined && c.events === undefined && c.summary !== null,
  );
}

function floorRowsOf(scenario: ScenarioResult): FloorRow[] {
  const ids = new Set(tesseraRows(scenario).map((c) => c.id));
  return (scenario.floor?.rows ?? []).filter((row) => ids.has(row.contender));
}

/**
 * Each row against `limit` times its new floor, the old multiple beside it; `met` is null when a
 * row has no new multiple to judge (its hand-off or bridge not measured, or nothing left once the
 * work measured apart is taken off) or when a store of `stores` has no row.
 */
function multiples(scenario: ScenarioResult, limit: number, stores: readonly string[]): { met: boolean | null; text: string } | null {
  const rows = floorRowsOf(scenario);
  if (rows.length === 0) return null;
  const storeOf = (id: string): string | null => scenario.contenders.find((c) => c.id === id)?.store ?? null;
  const parts = rows.map((r) => {
    const label = labelOf(scenario, r.contender);
    if (!hasNewMultiple(r))
      return r.newFloorUs == null
        ? `${label} not measured (its hand-off${storeOf(r.contender) === 'memory' ? ' or bridge' : ''} was not measured; old floor ${r.multiple.toFixed(2)}x)`
        : `${label} not measured (${us(r.figureUs)} µs once the work measured apart is taken off: within that measurement's spread)`;
    return `${label} ${r.newMultiple.toFixed(2)}x (${us(r.figureUs)} / ${us(r.newFloorUs)} µs; old floor ${r.multiple.toFixed(2)}x)${r.newMultiple <= limit ? '' : ' ✗'}`;
  });
  const missing = stores.filter((store) => !rows.some((r) => storeOf(r.contender) === store));
  if (missing.length > 0) parts.push(`not measured on ${missing.join(' and ')}`);
  const judged = rows.filter(hasNewMultiple);
  const failed = judged.some((r) => r.newMultiple > limit);
  return { met: failed ? false : judged.length < rows.length || missing.length > 0 ? null : true, text: parts.join(', ') };
}

function clientCredentialsBar(results: BenchResults): BarResult {
  const bar = `client_credentials ≤ ${clientCredentialsMaxMultiple}x its new floor on both stores`;
  const scenario = scenarioOf(results, 'client_credentials');
  const judged = scenario === undefined ? null : multiples(scenario, clientCredentialsMaxMultiple, barStores);
  if (judged === null) return { bar, met: null, figures: 'client_credentials and its floor were not measured in this run' };
  return { bar, met: judged.met, figures: judged.text };
}

function otherGrantsBar(results: BenchResults): BarResult {
  const bar = `every other grant scenario ≤ ${grantMaxMultiple}x its new floor on both stores (${otherGrants.join(', ')})`;
  const parts: string[] = [];
  const missing: string[] = [];
  let failed = false;
  let unjudged = false;
  for (const name of otherGrants) {
    const scenario = scenarioOf(results, name);
    const judged = scenario === undefined ? null : multiples(scenario, grantMaxMultiple, barStores);
    if (judged === null) {
      missing.push(name);
      continue;
    }
    if (judged.met === false) failed = true;
    if (judged.met === null) unjudged = true;
    parts.push(`${name}: ${judged.text}`);
  }
  if (parts.length === 0) return { bar, met: null, figures: 'none of them was measured against its floor in this run' };
  const notMeasured = missing.length === 0 ? '' : `; not measured: ${missing.join(', ')}`;
  return { bar, met: failed ? false : missing.length > 0 || unjudged ? null : true, figures: `${parts.join('; ')}${notMeasured}` };
}

function refreshAgainstPeerBar(results: BenchResults): BarResult {
  const bar = `refresh_token on Redis ≥ ${refreshMinPeerRatio}x node-oidc-provider on Redis in req/s`;
  const scenario = scenarioOf(results, 'refresh_token');
  const redisPeer = scenario?.contenders.find((c) => c.kind === 'peer' && c.store === 'redis');
  const tessera = scenario === undefined ? undefined : tesseraRows(scenario).find((c) => c.store === 'redis');
  const ratio = scenario?.ratios.find((r) => r.tessera === tessera?.id && r.peer === redisPeer?.id);
  if (scenario === undefined || ratio === undefined || tessera?.summary == null || redisPeer?.summary == null)
    return { bar, met: null, figures: 'refresh_token was not measured on Redis against the peer on Redis in this run' };
  const rounds = ratio.perRound.length > 0 ? ` (rounds: ${ratio.perRound.map((r) => `${r.toFixed(1)}x`).join(', ')})` : '';
  return {
    bar,
    met: ratio.rps >= refreshMinPeerRatio,
    figures: `${ratio.rps.toFixed(1)}x${rounds}: ${rps(tessera.summary.rps)} against ${rps(redisPeer.summary.rps)} req/s${floorBoundOf(results, scenario, tessera, redisPeer.summary.rps)}`,
  };
}

/**
 * What the bar asks against what the refresh's own floor allows on the run's cores, as the
 * client_credentials bound does for its grant (bench/README.md, "Bound"): a refresh that cost no
 * more than its new floor (its signature, the bare request, its store commands in ioredis and
 * redis-server, one bare batch hand-off; the old floor in files without it), with the load generator on the same cores and every core busy.
 */
function floorBoundOf(results: BenchResults, scenario: ScenarioResult, tessera: ContenderResult, peerRps: number): string {
  const row = scenario.floor?.rows.find((r) => r.contender === tessera.id);
  const floorUs = row?.newFloorUs ?? row?.floorUs;
  const summary = tessera.summary;
  if (floorUs === undefined || summary?.loadgenCores == null || summary.rps <= 0) return '';
  const loadgenUs = loadgenUsPerRequest({ loadgenCores: summary.loadgenCores, rps: summary.rps });
  const boundRps = boundRpsOf(results.machine.cores, floorUs + loadgenUs);
  const asked = refreshMinPeerRatio * peerRps;
  return (
    `; ${refreshMinPeerRatio}x the peer is ${rps(asked)} req/s, ${Math.round((100 * asked) / boundRps)}% of what the floor allows on ${results.machine.cores} cores ` +
    `(${rps(boundRps)} req/s: ${us(floorUs)} µs + ${us(loadgenUs)} µs of load generator a request, every core busy); Tessera ${Math.round((100 * summary.rps) / boundRps)}% of it`
  );
}

function p99Bar(results: BenchResults): BarResult {
  const bar = "p99 at or under the peer's wherever a peer runs";
  const parts: string[] = [];
  let failed = 0;
  for (const scenario of results.scenarios) {
    for (const tessera of tesseraRows(scenario)) {
      // The peer on the same store, or the one that keeps nothing (client_credentials).
      for (const peer of scenario.contenders.filter((c) => c.kind === 'peer' && (c.store === null || c.store === tessera.store))) {
        if (tessera.summary === null || peer.summary === null) continue;
        const worse = tessera.summary.latencyMs.p99 > peer.summary.latencyMs.p99;
        if (worse) failed++;
        parts.push(
          `${scenario.name}, ${contenderLabel(tessera)} ${formatMs(tessera.summary.latencyMs.p99)} vs ${contenderLabel(peer)} ${formatMs(peer.summary.latencyMs.p99)} ms${worse ? ' ✗' : ''}`,
        );
      }
    }
  }
  if (parts.length === 0) return { bar, met: null, figures: 'no peer ran in this run' };
  return { bar, met: failed === 0, figures: parts.join('; ') };
}

/**
 * Audit events on against off, per client_credentials request: each events-on twin
 * (`--events-beside`, runner/contenders.ts) against the same checkout with events off, measured
 * right before it in each round. Each round's ratio of CPU per request (server µs, + redis-server
 * µs on Redis); the bar judges their median, as a VM's drift moves both rows of a round alike.
 */
function eventsBar(results: BenchResults): BarResult {
  const bar = `audit events on ≤ ${Math.round((eventsMaxRatio - 1) * 100)}% more CPU per client_credentials request than events off, interleaved`;
  const scenario = scenarioOf(results, 'client_credentials');
  const twins = scenario?.contenders.filter((c) => c.events !== undefined && c.eventsOff !== undefined) ?? [];
  if (scenario === undefined || twins.length === 0)
    return { bar, met: null, figures: 'no events-on row in client_credentials (run with --events-beside file)' };
  const parts: string[] = [];
  let failed = false;
  let unjudged = false;
  for (const twin of twins) {
    const off = scenario.contenders.find((c) => c.id === twin.eventsOff);
    const cpu = (round: ContenderResult['rounds'][number], onRedis: boolean): number | null =>
      round.cpu.serverUsPerRequest === null || (onRedis && round.cpu.storeUsPerRequest === null)
        ? null
        : round.cpu.serverUsPerRequest + (onRedis ? (round.cpu.storeUsPerRequest ?? 0) : 0);
    const ratios: number[] = [];
    const onRedis = twin.store === 'redis';
    for (const on of twin.rounds) {
      const before = off?.rounds.find((r) => r.round === on.round);
      if (!on.valid || before?.valid !== true) continue;
      const onUs = cpu(on, onRedis);
      const offUs = cpu(before, onRedis);
      if (onUs !== null && offUs !== null && offUs > 0) ratios.push(onUs / offUs);
    }
    const label = contenderLabel(twin);
    if (off === undefined || ratios.length === 0) {
      unjudged = true;
      parts.push(`${label}: not measured (no round with both rows valid and their CPU read)`);
      continue;
    }
    const ratio = median(ratios);
    const over = ratio > eventsMaxRatio;
    failed ||= over;
    const figures = (c: ContenderResult): string =>
      c.summary?.serverUsPerRequest == null ? '?' : us(c.summary.serverUsPerRequest + (onRedis ? (c.summary.storeUsPerRequest ?? 0) : 0));
    parts.push(
      `${label} ${ratio >= 1 ? '+' : ''}${((ratio - 1) * 100).toFixed(1)}% (${figures(twin)} vs ${figures(off)} µs/req; rounds: ${ratios.map((r) => `${r.toFixed(3)}x`).join(', ')})${over ? ' ✗' : ''}`,
    );
  }
  return { bar, met: failed ? false : unjudged ? null : true, figures: parts.join('; ') };
}

/** Every bar of issue 33, in the issue's order. */
export function judgeBars(results: BenchResults): BarResult[] {
  return [clientCredentialsBar(results), otherGrantsBar(results), refreshAgainstPeerBar(results), p99Bar(results), eventsBar(results)];
}

export function formatBars(bars: readonly BarResult[]): string {
  const verdict = (met: boolean | null): string => (met === null ? 'not measured' : met ? 'met' : 'NOT MET');
  return ["### Issue 33's bars (this run)", '', ...bars.map((b) => `- **${verdict(b.met)}**: ${b.bar}. ${b.figures}`)].join('\n');
}
