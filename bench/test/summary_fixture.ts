import type { BenchResults, ContenderResult, RoundResult, Summary } from '../report/results.js';

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

/** One measured round for report tests: `rps` req/s at p99 `p99` ms, valid unless `valid` is false. */
export function roundResult(parts: {
  n: number;
  rps?: number;
  p99?: number;
  valid?: boolean;
  background?: RoundResult['background'];
}): RoundResult {
  const { n, rps = 1, p99 = 3, valid = true } = parts;
  return {
    round: n,
    load: {
      requests: rps,
      durationS: 1,
      rps,
      latencyMs: { p50: 1, p90: 2, p99, max: 4, mean: 1 },
      non2xx: 0,
      unexpected: valid ? 0 : 1,
      errors: { connect: 0, read: 0, write: 0, timeout: 0 },
      badSample: null,
      kinds: [],
      exhausted: null,
    },
    valid,
    invalidReason: valid ? null : '1 unexpected answer',
    cpu: { serverCores: null, serverUsPerRequest: null, storeCores: null, storeUsPerRequest: null, loadgenCores: null, otherCores: null },
    stealPercent: null,
    warmup: { rps, invalidReason: null },
    batch: null,
    itemsMade: null,
    ...(parts.background === undefined || parts.background === null ? {} : { background: parts.background }),
  };
}

/** A contender's result for report tests: no rounds, no memory figures, no error. */
export function contenderResult(
  id: string,
  kind: ContenderResult['kind'],
  store: ContenderResult['store'],
  s: Summary | null,
): ContenderResult {
  return {
    id,
    label: id,
    kind,
    store,
    detail: {},
    kinds: [],
    rounds: [],
    summary: s,
    memory: { idleRssBytes: null, afterRssBytes: null, peakRssBytes: null },
    error: null,
  };
}

/** A run's results for report tests, on a machine of 2 cores: the scenarios and parts given, nothing else. */
export function benchResults(parts: Partial<BenchResults> & Pick<BenchResults, 'scenarios'>): BenchResults {
  return {
    schema: 1,
    startedAt: '',
    finishedAt: '',
    argv: [],
    machine: { cpuModel: 'x', cores: 2, totalMemoryBytes: 0, node: 'v20', kernel: '', platform: 'linux', arch: 'x64', hostname: 'h' },
    settings: {} as BenchResults['settings'],
    pending: [],
    sign: null,
    ...parts,
  };
}
