/**
 * A scenario with a background load (a sign-in flood, say) measures each Tessera contender alone
 * and under the load, in the same rounds: this puts the two side by side, from the medians over
 * valid rounds (the table's figures), with the background load's own figures per measured run.
 */
import { median, medianOrNull } from '../support/stats.js';
import type { ContenderResult, UnderLoadComparison } from './results.js';

/** One comparison per contender under a load whose twin alone has figures too. */
export function underLoadComparisons(contenders: readonly ContenderResult[]): UnderLoadComparison[] {
  const comparisons: UnderLoadComparison[] = [];
  for (const loaded of contenders) {
    if (loaded.background === undefined || loaded.alone === undefined) continue;
    const alone = contenders.find((c) => c.id === loaded.alone);
    // Either may have failed or had no valid round: the table says why.
    if (loaded.summary === null || alone?.summary == null) continue;
    const runs = loaded.rounds.flatMap((round) =>
      round.valid && round.background != null && round.background.durationS > 0 ? [round.background] : [],
    );
    comparisons.push({
      background: loaded.background,
      loaded: loaded.id,
      alone: alone.id,
      loadedLatencyMs: loaded.summary.latencyMs,
      aloneLatencyMs: alone.summary.latencyMs,
      loadedRps: loaded.summary.rps,
      aloneRps: alone.summary.rps,
      backgroundPerRun:
        runs.length === 0
          ? null
          : {
              connections: Math.max(...runs.map((r) => r.connections)),
              answeredPerS: median(runs.map((r) => r.answered / r.durationS)),
              shedPerS: median(runs.map((r) => r.shed / r.durationS)),
              timeouts: median(runs.map((r) => r.timeouts)),
              socketErrors: median(runs.map((r) => r.socketErrors)),
              loadgenCores: medianOrNull(runs.map((r) => r.loadgenCores)),
            },
    });
  }
  return comparisons;
}
