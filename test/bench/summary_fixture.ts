import type { Summary } from '../../bench/report/results.js';

/** A contender's summary for report tests: `rps` req/s, every other figure unknown unless given. */
export function summary(rps: number, figures: Partial<Summary> = {}): Summary {
  return {
    validRounds: 1,
    rps,
    latencyMs: { p50: 1, p90: 2, p99: 3, max: 4, mean: 1 },
    serverCores: null,
    serverUsPerRequest: null,
    storeUsPerRequest: null,
    loadgenCores: null,
    otherCores: null,
    stealPercent: null,
    ...figures,
  };
}
