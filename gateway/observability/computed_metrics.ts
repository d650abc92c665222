import type { Registry } from 'prom-client';

/** One line of a metric as prom-client's registry formats it (`Registry.registerMetric`'s `get`). */
export interface MetricValue {
  readonly metricName: string;
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
}

/**
 * The `_bucket`, `_sum` and `_count` lines of one labelled histogram, from counts that are not
 * cumulative (the last is `+Inf`): for histograms counted outside prom-client, on other threads or
 * on the request path (docs/operations.md, "Metrics").
 */
export function histogramValues(
  name: string,
  labels: Readonly<Record<string, string>>,
  bounds: readonly string[],
  counts: ArrayLike<number>,
  sumSeconds: number,
): MetricValue[] {
  const values: MetricValue[] = [];
  let cumulative = 0;
  for (let b = 0; b < counts.length; b++) {
    cumulative += counts[b] as number;
    values.push({ metricName: `${name}_bucket`, labels: { le: bounds[b] as string, ...labels }, value: cumulative });
  }
  values.push({ metricName: `${name}_sum`, labels, value: sumSeconds });
  values.push({ metricName: `${name}_count`, labels, value: cumulative });
  return values;
}

/** The `le` labels of `buckets`' upper bounds, then `+Inf`. */
export function bucketBounds(buckets: readonly number[]): string[] {
  return [...buckets.map(String), '+Inf'];
}

/**
 * Registers a metric whose lines are computed at scrape time. prom-client types its registry's
 * metrics as its own classes; any object with `get` and `reset` is what the registry calls.
 */
export function registerComputedMetric(
  registry: Registry,
  metric: { name: string; help: string; type: 'counter' | 'histogram'; values: () => MetricValue[] },
): void {
  registry.registerMetric({
    name: metric.name,
    help: metric.help,
    type: metric.type,
    get: () => ({ name: metric.name, help: metric.help, type: metric.type, values: metric.values(), aggregator: 'sum' }),
    reset: () => {},
  } as unknown as Parameters<Registry['registerMetric']>[0]);
}
