/** The console report: one Markdown table per scenario (pasteable into bench/README.md). */
import { errorCount } from '../load/load_generator.js';
import { formatRssTrend } from '../support/rss_trend.js';
import { medianOrNull } from '../support/stats.js';
import { floorCells, formatFloor } from './floors.js';
import { formatProcessScaling } from './process_scaling.js';
import type {
  BaselineComparison,
  BenchResults,
  ContenderResult,
  FloorRow,
  RatioResult,
  ScenarioResult,
  UnderLoadComparison,
} from './results.js';

const dash = '–';

export function formatInteger(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return dash;
  return ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0);
}

function formatCores(cores: number | null): string {
  return cores === null ? dash : `${Math.round(cores * 100)}%`;
}

function formatUs(us: number | null): string {
  return us === null ? dash : us < 100 ? us.toFixed(1) : formatInteger(us);
}

function formatMiB(bytes: number | null): string {
  return bytes === null ? '?' : `${Math.round(bytes / 1024 ** 2)}`;
}

export function contenderLabel(contender: ContenderResult): string {
  if (contender.kind !== 'peer') return contender.label;
  const version = typeof contender.detail.version === 'string' ? ` ${contender.detail.version}` : '';
  return `${contender.label}${version}${contender.store === null ? '' : ` (${contender.store})`}`;
}

function row(contender: ContenderResult, floor: FloorRow | undefined): string {
  const s = contender.summary;
  const rounds = contender.rounds.map((r) => (r.valid ? formatInteger(r.load.rps) : `✗${formatInteger(r.load.rps)}`)).join(' · ');
  const non2xx = contender.rounds.reduce((sum, r) => sum + r.load.non2xx, 0);
  const errors = contender.rounds.reduce((sum, r) => sum + errorCount(r.load) + r.load.unexpected, 0);
  const m = contender.memory;
  const memory = `${formatMiB(m.idleRssBytes)} → ${formatMiB(m.afterRssBytes)} (${formatMiB(m.peakRssBytes)})`;
  const cells =
    s === null
      ? [
          contenderLabel(contender),
          contender.error === null ? 'INVALID' : 'FAILED',
          rounds || dash,
          dash,
          dash,
          dash,
          dash,
          String(non2xx),
          String(errors),
          dash,
          dash,
          dash,
          dash,
          dash,
          dash,
          dash,
          dash,
          memory,
        ]
      : [
          contenderLabel(contender),
          formatInteger(s.rps),
          rounds,
          formatMs(s.latencyMs.p50),
          formatMs(s.latencyMs.p90),
          formatMs(s.latencyMs.p99),
          formatMs(s.latencyMs.max),
          String(non2xx),
          String(errors),
          formatCores(s.serverCores),
          formatUs(s.serverUsPerRequest),
          formatUs(s.storeUsPerRequest),
          ...floorCells(floor),
          formatCores(s.loadgenCores),
          formatCores(s.otherCores),
          s.stealPercent === null ? dash : `${Math.round(s.stealPercent)}%`,
          memory,
        ];
  return `| ${cells.join(' | ')} |`;
}

export function formatRatio(ratio: RatioResult, contenders: readonly ContenderResult[]): string {
  const name = (id: string): string => {
    const contender = contenders.find((c) => c.id === id);
    return contender === undefined ? id : contenderLabel(contender);
  };
  const rounds = ratio.perRound.length > 0 ? ` (rounds: ${ratio.perRound.map((r) => `${r.toFixed(1)}x`).join(', ')})` : '';
  const cpu =
    ratio.tesseraUsPerRequest !== null && ratio.peerUsPerRequest !== null
      ? `; server CPU per request ${formatUs(ratio.tesseraUsPerRequest)} µs vs ${formatUs(ratio.peerUsPerRequest)} µs (${(ratio.peerUsPerRequest / ratio.tesseraUsPerRequest).toFixed(1)}x less)`
      : '';
  return `${name(ratio.tessera)} ÷ ${name(ratio.peer)}: **${ratio.rps.toFixed(1)}x** req/s${rounds}${cpu}`;
}

/** A ratio of two nearby figures: two decimals, and the change in percent. */
function formatChange(ratio: number): string {
  const percent = (ratio - 1) * 100;
  return `${ratio.toFixed(2)}x (${percent >= 0 ? '+' : '−'}${Math.abs(percent).toFixed(1)}%)`;
}

/** `--baseline-root`: this checkout against the baseline on one store. */
export function formatBaselineComparison(comparison: BaselineComparison, contenders: readonly ContenderResult[]): string {
  const name = (id: string): string => {
    const contender = contenders.find((c) => c.id === id);
    return contender === undefined ? id : contenderLabel(contender);
  };
  const rounds = comparison.perRound.length > 0 ? `; rounds: ${comparison.perRound.map((r) => `${r.toFixed(2)}x`).join(', ')}` : '';
  const cpu =
    comparison.usPerRequest === null
      ? ''
      : `; server µs/req ${formatUs(comparison.tesseraUsPerRequest)} vs ${formatUs(comparison.baselineUsPerRequest)}: **${formatChange(comparison.usPerRequest)}**`;
  const store =
    comparison.storeUsPerRequest === null
      ? ''
      : `; Redis µs/req ${formatUs(comparison.tesseraStoreUsPerRequest)} vs ${formatUs(comparison.baselineStoreUsPerRequest)}: ${formatChange(comparison.storeUsPerRequest)}`;
  return (
    `${name(comparison.tessera)} vs ${name(comparison.baseline)}: **${formatChange(comparison.rps)}** req/s ` +
    `(${formatInteger(comparison.tesseraRps)} vs ${formatInteger(comparison.baselineRps)}${rounds})${cpu}${store}`
  );
}

/** A contender under a background load against itself alone, and what the load itself got. */
export function formatUnderLoad(comparison: UnderLoadComparison, contenders: readonly ContenderResult[]): string {
  const alone = contenders.find((c) => c.id === comparison.alone);
  const name = alone === undefined ? comparison.alone : contenderLabel(alone);
  const times = (loaded: number, idle: number): string => (idle > 0 ? ` (${(loaded / idle).toFixed(1)}x)` : '');
  const latency = (['p50', 'p90', 'p99'] as const).map((p) => {
    const loaded = comparison.loadedLatencyMs[p];
    const idle = comparison.aloneLatencyMs[p];
    return `${p} ${formatMs(idle)} → ${formatMs(loaded)} ms${times(loaded, idle)}`;
  });
  const rps = `req/s ${formatInteger(comparison.aloneRps)} → ${formatInteger(comparison.loadedRps)}${times(comparison.loadedRps, comparison.aloneRps)}`;
  const b = comparison.backgroundPerRun;
  const load =
    b === null
      ? ''
      : `; the ${comparison.background} (${b.connections} connections, per measured run): ${formatInteger(b.answeredPerS)} answered/s, ` +
        `${formatInteger(b.shedPerS)} shed/s, ${formatInteger(b.timeouts)} timed out (2 s), ${formatInteger(b.socketErrors)} socket errors` +
        (b.loadgenCores === null ? '' : `, its load generator ${formatCores(b.loadgenCores)} CPU`);
  return `${name} alone → under the ${comparison.background}: **${latency.join(', ')}**; ${rps}${load}`;
}

/** Per contender: its mix as answered, the worker batch size, the items made per run. */
function contenderDetails(contender: ContenderResult): string[] {
  const out: string[] = [];
  const valid = contender.rounds.filter((r) => r.valid);
  const label = contenderLabel(contender);
  if ((contender.kinds ?? []).length > 1 && valid.length > 0) {
    const total = new Map<string, number>();
    for (const round of valid) for (const kind of round.load.kinds) total.set(kind.name, (total.get(kind.name) ?? 0) + kind.matched);
    const sum = [...total.values()].reduce((a, b) => a + b, 0);
    const weights = contender.kinds.reduce((a, k) => a + k.weight, 0);
    const shares = contender.kinds.map(
      (k) =>
        `${k.name} ${((100 * (total.get(k.name) ?? 0)) / Math.max(1, sum)).toFixed(1)}% (asked ${((100 * k.weight) / weights).toFixed(0)}%)`,
    );
    out.push(`${label}: answers per kind, each checked against its kind: ${shares.join(', ')}`);
  }
  const batch = medianOrNull(valid.map((r) => r.batch ?? null));
  if (batch !== null) out.push(`${label}: ${batch.toFixed(1)} requests per worker task on average (tessera_worker_batch_size)`);
  const mainUs = medianOrNull(valid.map((r) => r.threads?.mainUsPerRequest ?? null));
  const othersUs = medianOrNull(valid.map((r) => r.threads?.othersUsPerRequest ?? null));
  if (mainUs !== null && othersUs !== null)
    out.push(
      `${label}: server CPU per request by thread: ${mainUs.toFixed(1)} µs on the main (uWS) thread, ${othersUs.toFixed(1)} µs on the others (workers, GC and libuv helpers)`,
    );
  const made = medianOrNull(valid.map((r) => r.itemsMade ?? null));
  if (made !== null) out.push(`${label}: ${formatInteger(made)} single-use items made for each measured run`);
  // Runs too short to judge keep their samples in the results file only.
  const trends = contender.rounds.flatMap((r) =>
    r.rss === undefined || r.rss === null || r.rss.flat === null ? [] : [`round ${r.round}: ${formatRssTrend(r.rss)}`],
  );
  if (trends.length > 0) out.push(`${label}: RSS through the measured run, ${trends.join('; ')}`);
  const loads = contender.rounds.flatMap((r) =>
    r.background == null
      ? []
      : [
          `round ${r.round}: ${formatInteger(r.background.requests)} answers in ${r.background.durationS.toFixed(0)} s, ` +
            `${formatInteger(r.background.answered)} served, ${formatInteger(r.background.shed)} shed, ` +
            `${formatInteger(r.background.unexpected)} unexpected, ${formatInteger(r.background.timeouts)} timed out` +
            (r.background.unanswered === null ? '' : `, ${formatInteger(r.background.unanswered)} unanswered at the end`) +
            `, latency p50 ${formatMs(r.background.latencyMs.p50)} p99 ${formatMs(r.background.latencyMs.p99)} ms` +
            (r.background.answered === 0 ? ' (no request served in the whole run: only its sheds loaded the server)' : ''),
        ],
  );
  if (loads.length > 0) out.push(`${label}: the ${contender.background ?? 'background load'}, ${loads.join('; ')}`);
  return out;
}

export const tableHeader =
  '| contender | req/s (median) | each round | p50 ms | p90 ms | p99 ms | max ms | non-2xx | errors | server CPU | server µs/req | Redis µs/req | floor µs | × floor | old floor µs | × old floor | load gen CPU | other processes | steal | RSS MiB idle → after (peak) |\n' +
  '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|';

export function formatScenario(scenario: ScenarioResult): string {
  const floorOf = (id: string): FloorRow | undefined => scenario.floor?.rows.find((r) => r.contender === id);
  const labelOf = (id: string): string => {
    const contender = scenario.contenders.find((c) => c.id === id);
    return contender === undefined ? id : contenderLabel(contender);
  };
  const lines = [`### ${scenario.name}`, '', scenario.measures, '', tableHeader, ...scenario.contenders.map((c) => row(c, floorOf(c.id)))];
  const baselines = scenario.baselines ?? [];
  const underLoad = scenario.underLoad ?? [];
  const scaling = scenario.scaling ?? [];
  if (scenario.ratios.length > 0 || baselines.length > 0 || underLoad.length > 0 || scaling.length > 0) {
    lines.push('');
    for (const ratio of scenario.ratios) lines.push(`- ${formatRatio(ratio, scenario.contenders)}`);
    for (const comparison of baselines) lines.push(`- ${formatBaselineComparison(comparison, scenario.contenders)}`);
    for (const comparison of underLoad) lines.push(`- ${formatUnderLoad(comparison, scenario.contenders)}`);
    for (const comparison of scaling) lines.push(`- ${formatProcessScaling(comparison, labelOf)}`);
  }
  const details = [
    ...(scenario.floor === undefined ? [] : [formatFloor(scenario.floor, labelOf)]),
    ...(scenario.notes ?? []),
    ...scenario.contenders.flatMap(contenderDetails),
  ];
  if (details.length > 0) lines.push('', ...details.map((d) => `- ${d}`));
  const busiest = Math.max(0, ...scenario.contenders.flatMap((c) => c.rounds.map((r) => r.cpu.otherCores ?? 0)));
  if (busiest >= 0.2) {
    lines.push(
      '',
      `Note: other processes on this machine used up to ${Math.round(busiest * 100)}% of a core during these runs; absolute figures are depressed, compare within the run.`,
    );
  }
  const problems: string[] = [];
  for (const contender of scenario.contenders) {
    const label = contenderLabel(contender);
    if (contender.error !== null) problems.push(`${label}: ${contender.error}`);
    for (const round of contender.rounds) {
      if (!round.valid) problems.push(`${label} round ${round.round}: ${round.invalidReason} — NOT COUNTED`);
      if (round.warmup.invalidReason !== null) problems.push(`${label} round ${round.round} warm-up: ${round.warmup.invalidReason}`);
    }
  }
  if (problems.length > 0) {
    lines.push('', '**!!! ERRORS in this scenario — the affected runs are not results:**', ...problems.map((p) => `- ${p}`));
  }
  return lines.join('\n');
}

export function formatSettings(results: BenchResults): string {
  const s = results.settings;
  const rounds = s.rounds === 'auto' ? '2 rounds with several contenders, else 1' : `${s.rounds} round(s)`;
  return (
    (s.label === null ? '' : `${s.label}: `) +
    `${s.connections} connections, ${s.durationS} s measured after ${s.warmupS} s warm-up, ${rounds}, interleaved; ` +
    `${s.loadgen.name} ${s.loadgen.version} (${s.loadgen.threads} thread${s.loadgen.threads === 1 ? '' : 's'}); ` +
    `Tessera from ${s.gateway.target === 'dist' ? 'dist/' : 'TypeScript sources'}${s.gateway.root === null ? '' : ` of ${s.gateway.root}`}, ${s.gateway.threads} worker threads` +
    (s.gateway.processes === undefined ? '' : ` per process, ${s.gateway.processes.join(' and ')} process(es) on one port`) +
    (s.gateway.git === null ? '' : ` (commit ${s.gateway.git.commit.slice(0, 7)}${s.gateway.git.dirty ? ' + uncommitted changes' : ''})`) +
    (s.baseline == null
      ? ''
      : `; baseline${s.baseline.label === null ? '' : ` "${s.baseline.label}"`}: Tessera from ${s.baseline.target === 'dist' ? 'dist/' : 'TypeScript sources'} of ${s.baseline.root}` +
        (s.baseline.git === null
          ? ''
          : ` (commit ${s.baseline.git.commit.slice(0, 7)}${s.baseline.git.dirty ? ' + uncommitted changes' : ''})`)) +
    (s.redis === null ? '' : `; Redis ${s.redis}`)
  );
}
