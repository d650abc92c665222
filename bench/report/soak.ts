/**
 * The soak's figures and verdict (`npm run bench -- soak`, bench/README.md "Soak and bursts"):
 * every request answered (served, or refused with 503 + Retry-After), the dispatcher's gauges back
 * to 0 once traffic stops, the gateway's RSS at start and end, and latency per phase: the steady
 * load between bursts, the steady load during bursts, and the burst connections themselves.
 */
import { addCount, emptyCount, type TrafficCount } from '../soak/classify.js';

/** A span of wall-clock time, epoch ms. */
export interface Window {
  startMs: number;
  endMs: number;
}

/** One steady-load answer: when it completed (epoch ms) and how long it took. */
export interface Sample {
  endMs: number;
  latencyMs: number;
}

export interface LatencyFigures {
  requests: number;
  p50: number | null;
  p99: number | null;
  max: number | null;
}

export interface SoakSettings {
  durationS: number;
  connections: number;
  rate: number;
  burstSize: number;
  burstEveryS: number;
  deadlineMs: number;
  /** Each kind's share of the steady load and of a burst, in percent. */
  steadyShares: Record<string, number>;
  burstShares: Record<string, number>;
}

export interface SoakResults {
  settings: SoakSettings;
  steady: TrafficCount[];
  bursts: TrafficCount[];
  /** Bursts fired, and each one's span from its first connect to its last answer. */
  burstWindows: Window[];
  /** Answers that came on a steady connection with nothing outstanding. */
  strayAnswers: number;
  /** The steady load's feed that ran out, or null. */
  exhausted: string | null;
  phases: { steadyBetween: LatencyFigures; steadyDuring: LatencyFigures; burst: LatencyFigures };
  /** The gauges read from /metrics once traffic stopped; null when /metrics did not have them. */
  gauges: { inFlight: number | null; queueDepth: number | null };
  rss: { startBytes: number | null; endBytes: number | null; peakBytes: number | null };
  /** Why the run failed; empty when it passed. */
  failures: string[];
}

/** Windows sorted by start, overlapping ones merged (a burst still answering when the next begins). */
export function mergeWindows(windows: readonly Window[]): Window[] {
  const sorted = [...windows].sort((a, b) => a.startMs - b.startMs);
  const merged: Window[] = [];
  for (const window of sorted) {
    const last = merged[merged.length - 1];
    if (last !== undefined && window.startMs <= last.endMs) last.endMs = Math.max(last.endMs, window.endMs);
    else merged.push({ ...window });
  }
  return merged;
}

/**
 * Splits the steady load's answers into those whose request was in flight at any moment of a
 * burst (sent before a burst's last answer and answered after its first connect) and the rest.
 */
export function splitByBursts(samples: readonly Sample[], windows: readonly Window[]): { between: number[]; during: number[] } {
  const merged = mergeWindows(windows);
  const between: number[] = [];
  const during: number[] = [];
  for (const sample of samples) {
    const sentMs = sample.endMs - sample.latencyMs;
    // The first merged window that ends at or after the request was sent.
    let lo = 0;
    let hi = merged.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((merged[mid] as Window).endMs < sentMs) lo = mid + 1;
      else hi = mid;
    }
    const window = merged[lo];
    if (window !== undefined && window.startMs <= sample.endMs) during.push(sample.latencyMs);
    else between.push(sample.latencyMs);
  }
  return { between, during };
}

/** Nearest-rank percentile (`p` in 0-100) of unsorted values; null when there are none. */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] as number;
}

export function latencyFigures(values: readonly number[]): LatencyFigures {
  let max: number | null = null;
  for (const value of values) if (max === null || value > max) max = value;
  return { requests: values.length, p50: percentile(values, 50), p99: percentile(values, 99), max };
}

/** The counts of several kinds as one row. */
export function totalOf(name: string, counts: readonly TrafficCount[]): TrafficCount {
  const total = emptyCount(name);
  for (const count of counts) addCount(total, count);
  return total;
}

/** Served and refused over sent, in percent; null when nothing was sent. */
export function answeredShare(count: TrafficCount): number | null {
  return count.sent === 0 ? null : (100 * (count.served + count.refused)) / count.sent;
}

/** Why a soak run fails: any request not answered exactly once as it should be, or work left in the gateway. */
export function soakFailures(results: Omit<SoakResults, 'failures'>): string[] {
  const failures: string[] = [];
  for (const [traffic, counts] of [
    ['steady load', results.steady],
    ['bursts', results.bursts],
  ] as const) {
    for (const count of counts) {
      const problems: string[] = [];
      if (count.unanswered > 0) problems.push(`${count.unanswered} of ${count.sent} unanswered`);
      if (count.wrong > 0) problems.push(`${count.wrong} answered neither as expected nor 503 + Retry-After`);
      if (count.answeredTwice > 0) problems.push(`${count.answeredTwice} answered twice`);
      if (problems.length > 0)
        failures.push(`${traffic}, ${count.name}: ${problems.join(', ')}${count.sample === null ? '' : ` (first: ${count.sample})`}`);
    }
  }
  if (totalOf('all', [...results.steady, ...results.bursts]).sent === 0) failures.push('nothing was sent');
  if (results.bursts.length > 0 && results.burstWindows.length === 0)
    failures.push('no burst was fired (--duration must be longer than --burst-every)');
  if (results.strayAnswers > 0) failures.push(`steady load: ${results.strayAnswers} answers to no outstanding request`);
  if (results.exhausted !== null) failures.push(`the steady load's ${results.exhausted} feed ran out (more must be prepared)`);
  const { inFlight, queueDepth } = results.gauges;
  if (inFlight !== 0) failures.push(`tessera_worker_requests_in_flight is ${inFlight ?? 'unreadable'} after the traffic stopped`);
  if (queueDepth !== 0) failures.push(`tessera_worker_queue_depth is ${queueDepth ?? 'unreadable'} after the traffic stopped`);
  return failures;
}

const whole = (n: number): string => n.toLocaleString('en-US');
const ms = (n: number | null): string => (n === null ? '–' : n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : n.toFixed(0));
const mib = (bytes: number | null): string => (bytes === null ? '–' : (bytes / 1024 ** 2).toFixed(1));

/** Two decimals, but never rounded up to 100.00 when something is missing. */
export function formatShare(share: number | null): string {
  if (share === null) return '–';
  const text = share.toFixed(2);
  return text === '100.00' && share < 100 ? '99.99' : text;
}

function countRow(label: string, count: TrafficCount): string {
  return `| ${label} | ${whole(count.sent)} | ${whole(count.served)} | ${whole(count.refused)} | ${whole(count.wrong)} | ${whole(count.unanswered)} | ${whole(count.answeredTwice)} | ${formatShare(answeredShare(count))}% |`;
}

function latencyRow(label: string, figures: LatencyFigures): string {
  return `| ${label} | ${whole(figures.requests)} | ${ms(figures.p50)} | ${ms(figures.p99)} | ${ms(figures.max)} |`;
}

/** The soak's report: counts, phases, gauges, memory and the verdict, as Markdown. */
export function formatSoak(results: SoakResults): string {
  const s = results.settings;
  const steadyTotal = totalOf('steady load', results.steady);
  const burstTotal = totalOf('bursts', results.bursts);
  const all = totalOf('all', [...results.steady, ...results.bursts]);
  const lines = [
    `### soak: mixed load on Redis with a burst of ${whole(s.burstSize)} connections every ${s.burstEveryS} s (${s.durationS} s)`,
    '',
    `Steady load: ${s.connections} keep-alive connections, at most ${whole(s.rate)} req/s (${shareText(s.steadyShares)}). ` +
      `Bursts: ${results.burstWindows.length} of ${whole(s.burstSize)} new connections, one request each (${shareText(s.burstShares)}). ` +
      `Answered = served as its kind expects, or refused with 503 + Retry-After; no answer within ${whole(s.deadlineMs)} ms is unanswered.`,
    '',
    '| traffic | sent | served | refused (503) | wrong | unanswered | answered twice | answered / sent |',
    '|---|--:|--:|--:|--:|--:|--:|--:|',
    ...results.steady.map((count) => countRow(`steady · ${count.name}`, count)),
    countRow('**steady load**', steadyTotal),
    ...results.bursts.map((count) => countRow(`bursts · ${count.name}`, count)),
    countRow('**bursts**', burstTotal),
    countRow('**all**', all),
    ...refusals(results),
    '',
    '| phase | answers | p50 ms | p99 ms | max ms |',
    '|---|--:|--:|--:|--:|',
    latencyRow('steady load, between bursts', results.phases.steadyBetween),
    latencyRow('steady load, during bursts', results.phases.steadyDuring),
    latencyRow('burst connections (connect to answer)', results.phases.burst),
    '',
    `Gateway once the traffic stopped: tessera_worker_requests_in_flight **${results.gauges.inFlight ?? 'unreadable'}**, ` +
      `tessera_worker_queue_depth **${results.gauges.queueDepth ?? 'unreadable'}**. ` +
      `RSS ${mib(results.rss.startBytes)} MiB at start, ${mib(results.rss.endBytes)} MiB at the end (peak ${mib(results.rss.peakBytes)} MiB).`,
    '',
    results.failures.length === 0
      ? `**PASSED**: ${formatShare(answeredShare(all))}% answered (${whole(all.served + all.refused)} of ${whole(all.sent)}), gauges at 0.`
      : `**FAILED**:\n${results.failures.map((failure) => `- ${failure}`).join('\n')}`,
  ];
  return lines.join('\n');
}

/** The first refusal of each kind that had any: which bound said no. */
function refusals(results: SoakResults): string[] {
  const lines = [...results.steady.map((count) => ['steady', count] as const), ...results.bursts.map((count) => ['bursts', count] as const)]
    .filter(([, count]) => count.refused > 0 && count.refusedSample !== null)
    .map(([traffic, count]) => `- ${traffic} · ${count.name}: ${count.refusedSample}`);
  return lines.length === 0 ? [] : ['', 'First refusal of each kind refused:', '', ...lines];
}

function shareText(shares: Record<string, number>): string {
  return Object.entries(shares)
    .map(([name, share]) => `${share}% ${name}`)
    .join(', ');
}
