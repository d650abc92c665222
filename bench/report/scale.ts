/** The console tables of the `scale` bench (its figures and arithmetic: scale_results.ts). */
import type { StoreKind } from '../scenarios/scenario.js';
import { median } from '../support/stats.js';
import {
  bytesPerItem,
  costRatio,
  growsFasterThanLinearly,
  medianRps,
  medianUs,
  startUpGrowth,
  type CostRow,
  type ScaleResults,
  type StartUpRow,
  type StoreRow,
} from './scale_results.js';
import { formatInteger, formatMs } from './table.js';

function mib(bytes: number | null): string {
  return bytes === null ? '–' : (bytes / 1024 ** 2).toFixed(0);
}

const storeName = (store: StoreKind): string => (store === 'redis' ? 'Redis' : 'memory');

export function formatStartUp(rows: readonly StartUpRow[]): string[] {
  const lines = [
    '| clients | store | start to /readyz 200, ms | RSS once ready, MiB |',
    '|---:|---|---:|---:|',
    ...[...rows]
      .sort((a, b) => (a.store === b.store ? a.clients - b.clients : a.store < b.store ? -1 : 1))
      .map((row) => `| ${formatInteger(row.clients)} | ${storeName(row.store)} | ${formatInteger(row.readyMs)} | ${mib(row.rssBytes)} |`),
    '',
  ];
  const growth = startUpGrowth(rows);
  for (const step of growth) {
    lines.push(
      `${storeName(step.store)}, ${formatInteger(step.fromClients)} → ${formatInteger(step.toClients)} clients: ` +
        `${step.msPerThousand.toFixed(1)} ms per 1,000 further clients, ` +
        `${step.bytesPerClient === null ? '?' : formatInteger(step.bytesPerClient)} bytes of RSS per further client`,
    );
  }
  for (const store of [...new Set(growth.map((step) => step.store))]) {
    const steps = growth.filter((step) => step.store === store);
    const time = growsFasterThanLinearly(steps.map((step) => step.msPerThousand));
    const rss = growsFasterThanLinearly(steps.map((step) => step.bytesPerClient));
    lines.push(
      `${storeName(store)}: start-up time ${time ? '**grows faster than linearly**' : 'grows linearly or less'}, ` +
        `RSS ${rss ? '**grows faster than linearly**' : 'grows linearly or less'} with the clients`,
    );
  }
  return lines;
}

export function formatCost(rows: readonly CostRow[], referenceId: string | null, cacheEntries: number): string[] {
  const reference = rows.find((row) => row.id === referenceId);
  const lines = [
    '| gateway | clients cycled | req/s | server µs/req | × the first row | p99 ms | rounds: µs/req |',
    '|---|---:|---:|---:|---:|---:|---|',
  ];
  for (const row of rows) {
    const us = medianUs(row);
    const rps = medianRps(row);
    const ratio = row.id === referenceId ? null : costRatio(row, reference);
    const p99 = median(row.rounds.filter((round) => round.valid).map((round) => round.p99Ms));
    const rounds = row.rounds
      .map((round) => `${round.valid ? '' : '✗'}${round.serverUsPerRequest === null ? '–' : round.serverUsPerRequest.toFixed(1)}`)
      .join(' · ');
    lines.push(
      `| ${row.label} | ${formatInteger(row.cycled)} | ${rps === null ? 'INVALID' : formatInteger(rps)} | ${us === null ? '–' : us.toFixed(1)} | ` +
        `${ratio === null ? '' : `${ratio.toFixed(2)}x`} | ${formatMs(p99)} | ${rounds} |`,
    );
  }
  const problems = rows.flatMap((row) =>
    row.rounds.filter((round) => !round.valid).map((round) => `${row.label}, round ${round.round}: ${round.invalidReason}`),
  );
  lines.push(
    '',
    `The gateway remembers at most ${formatInteger(cacheEntries)} Basic headers that authenticated; a load cycling over more clients than that misses every time.`,
  );
  for (const problem of problems) lines.push(`INVALID ${problem}`);
  return lines;
}

export function formatStore(rows: readonly StoreRow[], redisVersion: string | null): string[] {
  const lines = ['| store | record | written | bytes each | written per second |', '|---|---|---:|---:|---:|'];
  for (const row of rows) {
    const store = row.store === 'redis' ? `Redis${redisVersion === null ? '' : ` ${redisVersion}`}, used_memory` : 'memory store, heap';
    const item = row.item === 'family' ? 'refresh-token family' : 'pending device code';
    lines.push(
      `| ${store} | ${item} | ${formatInteger(row.count)} | ${formatInteger(bytesPerItem(row))} | ${formatInteger(row.count / row.seconds)} |`,
    );
  }
  return lines;
}

/** The whole console report of a scale run. */
export function formatScale(results: ScaleResults): string {
  const sections: string[] = ['### scale (costs as the work grows)', ''];
  if (results.startUp.length > 0)
    sections.push('Start-up with N configured clients (`tessera start`):', '', ...formatStartUp(results.startUp), '');
  if (results.cost.length > 0)
    sections.push(
      'client_credentials, server CPU per request, interleaved:',
      '',
      ...formatCost(results.cost, results.costReference, results.basicHeaderCacheEntries),
      '',
    );
  if (results.store.length > 0) sections.push('Store memory per live record:', '', ...formatStore(results.store, results.redisVersion), '');
  for (const failure of results.failures) sections.push(`FAILED: ${failure}`);
  return sections.join('\n');
}
