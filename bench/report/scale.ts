/** The console tables of the `scale` bench (its figures and arithmetic: scale_results.ts). */
import type { StoreKind } from '../scenarios/scenario.js';
import { median, medianOrNull } from '../support/stats.js';
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
  type StoredClientsResults,
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

/**
 * Clients kept in the store (`scale-store`): one line per count, its start-up and RSS, and the
 * server CPU per request of each load (spread over 1,000 ids, one id, past the cache), each with
 * its ratio to the same load at the smallest count: 1.00x is flat.
 */
export function formatStoredClients(stored: StoredClientsResults): string[] {
  const lines = [
    '| stored clients | written in, s | Redis used_memory, MiB | start to /readyz 200, ms | RSS once ready, MiB | RSS after load, MiB | µs/req, 1,000 ids | µs/req, 1 id | µs/req, past the cache |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const kinds = ['spread', 'one', 'beyond-cache'] as const;
  const first = stored.rows[0];
  const cell = (row: StoredClientsResults['rows'][number], kind: (typeof kinds)[number]): string => {
    const load = row.loads.find((l) => l.id.endsWith(`-${kind}`));
    if (load === undefined) return '–';
    const us = medianUs(load);
    if (us === null) return 'INVALID';
    const reference = first?.loads.find((l) => l.id.endsWith(`-${kind}`));
    const ratio = row === first ? null : costRatio(load, reference);
    const valid = load.rounds.filter((round) => round.valid);
    const storeUs = medianOrNull(valid.map((round) => round.storeUsPerRequest ?? null));
    const reads = medianOrNull(valid.map((round) => round.storeReadsPerRequest ?? null));
    const store =
      storeUs === null && reads === null
        ? ''
        : ` · Redis +${storeUs === null ? '–' : storeUs.toFixed(1)}, ${reads === null ? '–' : reads.toFixed(3)} GET`;
    return `${us.toFixed(1)}${ratio === null ? '' : ` (${ratio.toFixed(2)}x)`}${store}`;
  };
  for (const row of stored.rows) {
    lines.push(
      `| ${formatInteger(row.clients)} | ${row.seedSeconds.toFixed(1)} | ${mib(row.redisUsedBytes)} | ${formatInteger(row.readyMs)} | ` +
        `${mib(row.rssBytes)} | ${mib(row.rssAfterLoadBytes)} | ${kinds.map((kind) => cell(row, kind)).join(' | ')} |`,
    );
  }
  lines.push(
    '',
    `Each gateway caches ${formatInteger(stored.cacheSize)} stored clients; the load past the cache cycles over ${formatInteger(2 * stored.cacheSize)} ids, so every request reads its client from Redis. Each µs/req is the gateway's CPU (its ratio to the same load at ${first === undefined ? '–' : formatInteger(first.clients)} stored clients), then redis-server's CPU per request and its \`GET\` calls per request (1 = every request a store lookup).`,
  );
  for (const row of stored.rows)
    for (const load of row.loads)
      for (const round of load.rounds) if (!round.valid) lines.push(`INVALID ${load.label}, round ${round.round}: ${round.invalidReason}`);
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
  if (results.storedClients != null && results.storedClients.rows.length > 0)
    sections.push(
      'Clients kept in the store (`clientRegistry.store`, Redis), client_credentials server CPU per request (median of rounds):',
      '',
      ...formatStoredClients(results.storedClients),
      '',
    );
  for (const failure of results.failures) sections.push(`FAILED: ${failure}`);
  return sections.join('\n');
}
