/**
 * `--processes 1,2`: each Tessera contender with several processes (docs/operations.md, "Several
 * processes") beside the same server with one, measured in the same rounds: how far req/s grew,
 * and what a request cost in server CPU with each (a rise means the processes compete for cores).
 */
import type { ContenderResult, ProcessScaling } from './results.js';

export function processScalingComparisons(contenders: readonly ContenderResult[]): ProcessScaling[] {
  const comparisons: ProcessScaling[] = [];
  for (const scaled of contenders) {
    if (scaled.processes === undefined || scaled.oneProcess === undefined) continue;
    const single = contenders.find((c) => c.id === scaled.oneProcess);
    // Either may have failed or had no valid round: the table says why.
    if (scaled.summary === null || single?.summary == null) continue;
    const perRound: number[] = [];
    for (const round of scaled.rounds) {
      const twin = single.rounds.find((r) => r.round === round.round);
      if (round.valid && twin?.valid === true && twin.load.rps > 0) perRound.push(round.load.rps / twin.load.rps);
    }
    comparisons.push({
      store: scaled.store,
      processes: scaled.processes,
      scaled: scaled.id,
      single: single.id,
      scaledRps: scaled.summary.rps,
      singleRps: single.summary.rps,
      rps: single.summary.rps > 0 ? scaled.summary.rps / single.summary.rps : 0,
      perRound,
      scaledUsPerRequest: scaled.summary.serverUsPerRequest,
      singleUsPerRequest: single.summary.serverUsPerRequest,
      scaledCores: scaled.summary.serverCores,
      singleCores: single.summary.serverCores,
      scaledP99Ms: scaled.summary.latencyMs.p99,
      singleP99Ms: single.summary.latencyMs.p99,
    });
  }
  return comparisons;
}

/** One line for the list below a scenario's table. */
export function formatProcessScaling(scaling: ProcessScaling, labelOf: (id: string) => string): string {
  const us = (value: number | null): string => (value === null ? '?' : value.toFixed(1));
  const cores = (value: number | null): string => (value === null ? '?' : value.toFixed(2));
  const rounds = scaling.perRound.length > 1 ? ` (rounds: ${scaling.perRound.map((r) => `${r.toFixed(2)}x`).join(', ')})` : '';
  return (
    `${labelOf(scaling.scaled)}: ${scaling.rps.toFixed(2)}x the req/s of ${labelOf(scaling.single)} ` +
    `(${Math.round(scaling.scaledRps).toLocaleString('en-US')} against ${Math.round(scaling.singleRps).toLocaleString('en-US')}; ` +
    `${scaling.processes}x would be perfect)${rounds}; server CPU ${cores(scaling.scaledCores)} against ${cores(scaling.singleCores)} cores, ` +
    `${us(scaling.scaledUsPerRequest)} against ${us(scaling.singleUsPerRequest)} µs/req; p99 ${scaling.scaledP99Ms.toFixed(1)} against ${scaling.singleP99Ms.toFixed(1)} ms`
  );
}
