import { bareSignCase } from '../sign.js';
import type { BenchResults, ContenderResult, ThroughputBound } from './results.js';

function summaryOf(results: BenchResults, scenario: string, pick: (c: ContenderResult) => boolean): ContenderResult['summary'] {
  const found = results.scenarios.find((s) => s.name === scenario)?.contenders.find((c) => pick(c) && c.summary !== null);
  return found?.summary ?? null;
}

/** The load generator's CPU µs a request, from a row's cores and rate. */
export function loadgenUsPerRequest(summary: { loadgenCores: number; rps: number }): number {
  return (summary.loadgenCores * 1e6) / summary.rps;
}

/** The most req/s `cores` allow when each request costs `usPerRequest` of CPU and every core is busy. */
export function boundRpsOf(cores: number, usPerRequest: number): number {
  return (cores * 1e6) / usPerRequest;
}

/**
 * Null unless the run measured `client_credentials` validly, one bare ES256 signature (the `sign`
 * micro-bench, else the floors') and the bare uWS POST (in client_credentials' own rounds, else the
 * `ceiling` scenario, else the floors').
 */
export function throughputBound(results: BenchResults): ThroughputBound | null {
  const benched = results.sign?.cases.find((c) => c.name === bareSignCase);
  const floorSignUs = results.floors?.crypto.find((c) => c.alg === 'ES256')?.signUs;
  const signUs = benched !== undefined && benched.perCpuSecond > 0 ? 1e6 / benched.perCpuSecond : floorSignUs;
  // The bare request measured in client_credentials' own rounds (its floor's), else the ceiling scenario's, else the floors'.
  const httpUs =
    summaryOf(results, 'client_credentials', (c) => c.kind === 'ceiling')?.serverUsPerRequest ??
    summaryOf(results, 'ceiling', (c) => c.kind === 'ceiling')?.serverUsPerRequest ??
    results.floors?.http?.usPerRequest;
  // The faster of Tessera's stores: the bound is compared with its best.
  const tessera = results.scenarios
    .find((s) => s.name === 'client_credentials')
    ?.contenders.filter((c) => c.kind === 'tessera' && c.summary !== null)
    .map((c) => c.summary!)
    .sort((a, b) => b.rps - a.rps)[0];
  const peer = summaryOf(results, 'client_credentials', (c) => c.kind === 'peer');
  if (signUs === undefined || httpUs == null || tessera?.loadgenCores == null) return null;
  const loadgenUs = loadgenUsPerRequest({ loadgenCores: tessera.loadgenCores, rps: tessera.rps });
  const cores = results.machine.cores;
  return {
    cores,
    signUs,
    httpUs,
    loadgenUs,
    boundRps: boundRpsOf(cores, signUs + httpUs + loadgenUs),
    tesseraRps: tessera.rps,
    peerRps: peer?.rps ?? null,
  };
}

const us = (value: number): string => `${value.toFixed(1)} µs`;
const rps = (value: number): string => Math.round(value).toLocaleString('en-US');
const share = (value: number, of: number): string => `${Math.round((100 * value) / of)}% of it`;

export function formatThroughputBound(bound: ThroughputBound): string {
  const lines = [
    '### Bound (client_credentials, from this run)',
    '',
    `Any design that signs each token with one ES256 signature in Node and answers HTTP, with the load generator on the same ${bound.cores} cores, spends at least ` +
      `${us(bound.signUs)} (signature) + ${us(bound.httpUs)} (bare uWS POST) + ${us(bound.loadgenUs)} (load generator) of CPU per request: ` +
      `at most **${rps(bound.boundRps)} req/s** on this machine, with every core busy and nothing else.`,
    `- Tessera: ${rps(bound.tesseraRps)} req/s, ${share(bound.tesseraRps, bound.boundRps)}.`,
  ];
  if (bound.peerRps !== null) {
    const tenfold = 10 * bound.peerRps;
    lines.push(
      `- 10x node-oidc-provider (${rps(bound.peerRps)} req/s) is ${rps(tenfold)} req/s, ${share(tenfold, bound.boundRps)}` +
        (tenfold > bound.boundRps ? ': beyond what any such design can reach here.' : '.'),
    );
  }
  return lines.join('\n');
}
