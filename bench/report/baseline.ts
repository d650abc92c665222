/**
 * `--baseline-root`: the measured checkout against the baseline checkout, store by store, from the
 * medians over valid rounds (the same figures as the table) and round by round, since both ran
 * back to back in every round and a round's ratio cancels most of the machine's drift.
 */
import type { BaselineComparison, ContenderResult } from './results.js';

function ratio(numerator: number | null, denominator: number | null): number | null {
  return numerator === null || denominator === null || denominator <= 0 ? null : numerator / denominator;
}

/** One comparison per store on which both checkouts have a summary; none without a baseline. */
export function baselineComparisons(contenders: readonly ContenderResult[]): BaselineComparison[] {
  const comparisons: BaselineComparison[] = [];
  for (const baseline of contenders.filter((c) => c.kind === 'baseline')) {
    // Under the same background load, or none (a scenario with one measures each checkout both ways).
    const tessera = contenders.find((c) => c.kind === 'tessera' && c.store === baseline.store && c.background === baseline.background);
    // A checkout that failed or had no valid round has no figures: the table says why.
    if (tessera?.summary == null || baseline.summary === null || baseline.summary.rps <= 0) continue;
    const t = tessera.summary;
    const b = baseline.summary;
    const perRound: number[] = [];
    for (const round of tessera.rounds) {
      const other = baseline.rounds.find((r) => r.round === round.round);
      if (round.valid && other?.valid === true && other.load.rps > 0) perRound.push(round.load.rps / other.load.rps);
    }
    comparisons.push({
      store: baseline.store,
      tessera: tessera.id,
      baseline: baseline.id,
      tesseraRps: t.rps,
      baselineRps: b.rps,
      rps: t.rps / b.rps,
      perRound,
      tesseraUsPerRequest: t.serverUsPerRequest,
      baselineUsPerRequest: b.serverUsPerRequest,
      usPerRequest: ratio(t.serverUsPerRequest, b.serverUsPerRequest),
      tesseraStoreUsPerRequest: t.storeUsPerRequest,
      baselineStoreUsPerRequest: b.storeUsPerRequest,
      storeUsPerRequest: ratio(t.storeUsPerRequest, b.storeUsPerRequest),
    });
  }
  return comparisons;
}
