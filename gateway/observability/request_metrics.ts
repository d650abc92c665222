import type { Registry } from 'prom-client';
import { bucketBounds, histogramValues, registerComputedMetric, type MetricValue } from './computed_metrics.js';

/** The endpoints the request metrics name (label `endpoint`). */
export type MetricsEndpoint = 'token' | 'introspection' | 'revocation' | 'device_authorization' | 'pushed_authorization';

const durationBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] as const;
const durationBounds = bucketBounds(durationBuckets);

/** One endpoint and grant type's answers. */
interface RequestFigures {
  readonly labels: Readonly<{ endpoint: MetricsEndpoint; grant_type: string }>;
  /** Answers by HTTP status. */
  readonly byStatus: Map<number, number>;
  /** Durations per bucket, not cumulative; the last is `+Inf`. */
  readonly durations: Float64Array;
  sumSeconds: number;
}

/**
 * `tessera_http_requests_total{endpoint,grant_type,status}` and
 * `tessera_http_request_duration_seconds{endpoint,grant_type}` (docs/operations.md, "Metrics").
 *
 * Counted here and formatted at scrape time: prom-client's labelled children rebuild and hash
 * their label key on every `inc` and `observe`, which cost about 7% of the uWS thread's CPU on a
 * client_credentials request (docs/decisions/0020-uws-thread-per-request-cuts.md); here a request is two
 * Map lookups and three additions.
 */
export class RequestMetrics {
  private readonly figures = new Map<MetricsEndpoint, Map<string, RequestFigures>>();

  constructor(registry: Registry) {
    registerComputedMetric(registry, {
      name: 'tessera_http_requests_total',
      help: 'Answers of the OAuth endpoints by endpoint, grant type (token endpoint) and HTTP status.',
      type: 'counter',
      values: () => this.countValues(),
    });
    registerComputedMetric(registry, {
      name: 'tessera_http_request_duration_seconds',
      help: 'Time from a request read to its answer, by endpoint and grant type.',
      type: 'histogram',
      values: () => this.durationValues(),
    });
  }

  /** One answered request; `grantType` is `''` except at the token endpoint (a registered grant type). */
  observe(endpoint: MetricsEndpoint, grantType: string, status: number, seconds: number): void {
    let byGrant = this.figures.get(endpoint);
    if (byGrant === undefined) {
      byGrant = new Map();
      this.figures.set(endpoint, byGrant);
    }
    let figures = byGrant.get(grantType);
    if (figures === undefined) {
      figures = {
        labels: { endpoint, grant_type: grantType },
        byStatus: new Map(),
        durations: new Float64Array(durationBounds.length),
        sumSeconds: 0,
      };
      byGrant.set(grantType, figures);
    }
    figures.byStatus.set(status, (figures.byStatus.get(status) ?? 0) + 1);
    let bucket = 0;
    while (bucket < durationBuckets.length && seconds > (durationBuckets[bucket] as number)) bucket++;
    (figures.durations[bucket] as number)++;
    figures.sumSeconds += seconds;
  }

  private countValues(): MetricValue[] {
    const values: MetricValue[] = [];
    for (const byGrant of this.figures.values()) {
      for (const { labels, byStatus } of byGrant.values()) {
        for (const [status, count] of byStatus) {
          values.push({ metricName: 'tessera_http_requests_total', labels: { ...labels, status: String(status) }, value: count });
        }
      }
    }
    return values;
  }

  private durationValues(): MetricValue[] {
    const values: MetricValue[] = [];
    for (const byGrant of this.figures.values()) {
      for (const { labels, durations, sumSeconds } of byGrant.values()) {
        values.push(...histogramValues('tessera_http_request_duration_seconds', labels, durationBounds, durations, sumSeconds));
      }
    }
    return values;
  }
}
