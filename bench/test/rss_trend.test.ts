import t from 'tap';
import { flatBoundMiBPerMin, formatRssTrend, rssTrend, type RssSample } from '../support/rss_trend.js';

const mib = 1024 ** 2;

/** One sample a second for `seconds`, RSS given by `mibAt`. */
function samples(seconds: number, mibAt: (s: number) => number): RssSample[] {
  return Array.from({ length: seconds + 1 }, (_, s) => ({ atS: s, bytes: Math.round(mibAt(s) * mib) }));
}

t.test('a steady leak is GROWING, measured at its rate', async (t) => {
  // 20 MiB per minute from the start.
  const trend = rssTrend(samples(60, (s) => 200 + s / 3));
  t.ok(trend);
  t.equal(trend?.flat, false);
  t.ok(Math.abs((trend?.envelopeMiBPerMin ?? 0) - 20) < 0.1, `slope ${trend?.envelopeMiBPerMin}`);
  t.match(formatRssTrend(trend!), /GROWING/);
});

t.test('a warm-up that levels off is flat: the first third is not judged', async (t) => {
  // +80 MiB over the first 20 s, then a plateau with GC saw-teeth of ±3 MiB.
  const trend = rssTrend(samples(60, (s) => (s < 20 ? 200 + 4 * s : 280 + (s % 5 === 0 ? 3 : -3))));
  t.equal(trend?.flat, true);
  t.ok(Math.abs(trend?.envelopeMiBPerMin ?? 99) < flatBoundMiBPerMin);
  t.equal(Math.round((trend?.startBytes ?? 0) / mib), 200);
  t.equal(Math.round((trend?.maxBytes ?? 0) / mib), 283);
  t.match(formatRssTrend(trend!), /200 → 283 MiB \(max 283\) over 60 s, .*: flat/);
});

t.test('a collection late in the run is not growth: peaks are compared, not a fitted line', async (t) => {
  // A plateau near 360 MiB, a major collection at 35 s down to 330, then the heap refills to 355:
  // a line through the second half climbs steeply, but no peak is higher than before.
  const trend = rssTrend(samples(60, (s) => (s < 35 ? 355 + (s % 2) * 5 : 330 + (s - 35))));
  t.equal(trend?.flat, true);
  t.ok((trend?.envelopeMiBPerMin ?? 99) <= 0, `envelope ${trend?.envelopeMiBPerMin}`);
  t.equal(trend?.samples.length, 61, 'every sample is kept for the results file');
  t.same(trend?.samples[35], [35, 330]);
});

t.test('a slow leak just under the bound is flat, just over is not', async (t) => {
  const under = rssTrend(samples(60, (s) => 300 + ((flatBoundMiBPerMin - 1) / 60) * s));
  const over = rssTrend(samples(60, (s) => 300 + ((flatBoundMiBPerMin + 1) / 60) * s));
  t.equal(under?.flat, true);
  t.equal(over?.flat, false);
});

t.test('a short run is reported but not judged, and no samples give no trend', async (t) => {
  const short = rssTrend(samples(10, (s) => 200 + 10 * s));
  t.equal(short?.flat, null);
  t.match(formatRssTrend(short!), /not judged/);
  t.equal(rssTrend([]), null);
});
