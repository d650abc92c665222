/**
 * Whether a server's resident memory keeps growing under steady load (issue 8: "a 60 s run must
 * not grow RSS without bound"). The runner samples the server's RSS once a second through each
 * measured run; this reduces the samples to a trend.
 *
 * The trend compares the upper envelope of the last third of the run with that of the middle
 * third: the highest RSS in each, per minute between them. The first third is left out because it
 * holds the warm-up of V8's heap and of the store's maps, which grow before they level off; maxima
 * rather than a fitted line because garbage collection makes RSS a saw-tooth, whose teeth tilt a
 * short line either way while a leak lifts every peak. The bound of 10 MiB per minute is far below
 * any per-request leak at these rates: 8 bytes kept per request at 20,000 req/s is 9 MiB/min.
 */

export interface RssSample {
  /** Seconds since the measured run started. */
  atS: number;
  bytes: number;
}

export interface RssTrend {
  startBytes: number;
  endBytes: number;
  maxBytes: number;
  /** Seconds the samples span. */
  spanS: number;
  /** Highest RSS of the last third minus that of the middle third, per minute between them. */
  envelopeMiBPerMin: number;
  /** The samples, seconds and MiB (one decimal), for the results file. */
  samples: [number, number][];
  /** Under {@link flatBoundMiBPerMin}; null when the run was too short to tell (under 20 s). */
  flat: boolean | null;
}

export const flatBoundMiBPerMin = 10;
/** Shorter runs keep their samples but are not judged: a third of them spans too few collections. */
export const minimumJudgedSpanS = 20;

const mib = 1024 ** 2;

/** null without samples. */
export function rssTrend(samples: readonly RssSample[]): RssTrend | null {
  const first = samples[0];
  const last = samples.at(-1);
  if (first === undefined || last === undefined) return null;
  const spanS = last.atS - first.atS;
  const peakBetween = (from: number, to: number): number | null => {
    let peak: number | null = null;
    for (const s of samples) if (s.atS >= from && s.atS <= to && (peak === null || s.bytes > peak)) peak = s.bytes;
    return peak;
  };
  const third = spanS / 3;
  const middle = peakBetween(first.atS + third, first.atS + 2 * third);
  const end = peakBetween(first.atS + 2 * third, last.atS);
  const envelopeMiBPerMin = middle === null || end === null || third <= 0 ? 0 : ((end - middle) / mib) * (60 / third);
  return {
    startBytes: first.bytes,
    endBytes: last.bytes,
    maxBytes: Math.max(...samples.map((s) => s.bytes)),
    spanS,
    envelopeMiBPerMin,
    flat: spanS < minimumJudgedSpanS ? null : envelopeMiBPerMin < flatBoundMiBPerMin,
    samples: samples.map((s) => [Math.round(s.atS * 10) / 10, Math.round((s.bytes / mib) * 10) / 10]),
  };
}

export function formatRssTrend(trend: RssTrend): string {
  const m = (bytes: number): string => `${Math.round(bytes / mib)}`;
  const slope = `${trend.envelopeMiBPerMin >= 0 ? '+' : ''}${trend.envelopeMiBPerMin.toFixed(1)} MiB/min`;
  const verdict =
    trend.flat === null
      ? `not judged (under ${minimumJudgedSpanS} s)`
      : trend.flat
        ? `flat (under ${flatBoundMiBPerMin} MiB/min)`
        : `GROWING (${flatBoundMiBPerMin} MiB/min or more)`;
  return `${m(trend.startBytes)} → ${m(trend.endBytes)} MiB (max ${m(trend.maxBytes)}) over ${Math.round(trend.spanS)} s, peaks of the last third vs the middle ${slope}: ${verdict}`;
}
