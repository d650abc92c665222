import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { storeLatencyBuckets, type StoreCommandFigures } from '../workers/protocol/store_command_stats.js';
import type { ReusedItem } from '../workers/protocol/task_facts.js';

/** The endpoints the request metrics name (label `endpoint`). */
export type MetricsEndpoint = 'token' | 'introspection' | 'revocation' | 'device_authorization';

/** The throttles whose refusals are counted (label `throttle`, docs/security.md "Throttles"). */
export type ThrottleName = 'client_authentication' | 'password' | 'device_authorization' | 'introspection_inactive' | 'user_code';

/** What the pool and dispatcher gauges read at scrape time. */
export interface PoolGauges {
  /** Requests handed to the worker pool and not answered yet. */
  readonly inFlight: () => number;
  /** Requests waiting in the dispatcher's lanes for a free batch slot. */
  readonly waiting: () => number;
  /** Tasks waiting in Piscina's own queue. */
  readonly poolQueue: () => number;
  /** Piscina's utilisation of the pool's threads, 0 to 1. */
  readonly utilization: () => number;
  readonly threads: () => number;
}

/** The label children of one endpoint and grant type, cached: a label lookup costs more than the increment. */
interface GrantChildren {
  readonly duration: Histogram.Internal<'endpoint' | 'grant_type'>;
  readonly byStatus: Map<number, Counter.Internal>;
}

/**
 * Prometheus metrics of one gateway (docs/operations.md, "Metrics"). Its own registry, not
 * prom-client's global one, so that several gateways in one process (tests, embedding) do not
 * collide. Per-request updates go to cached label children.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'endpoint' | 'grant_type' | 'status'>;
  private readonly durations: Histogram<'endpoint' | 'grant_type'>;
  private readonly children = new Map<MetricsEndpoint, Map<string, GrantChildren>>();
  private readonly reuses: Counter<'item'>;
  private readonly throttleHits: Counter<'throttle'>;
  private readonly rotations: Counter;
  private readonly batchSizes: Histogram;
  private signingKeyCreatedAt: () => number | undefined;

  /**
   * `memoryStore`: the embedded store's record count and evictions, when it is the store.
   * `signingKeyCreatedAt`: when the key that signs now was made (epoch ms), for its age.
   */
  constructor(
    pool: PoolGauges,
    options: {
      memoryStore?: { readonly size: number; readonly evicted: number } | undefined;
      signingKeyCreatedAt?: () => number | undefined;
      eventsDropped?: () => ReadonlyMap<string, number>;
      storeCommands?: () => readonly StoreCommandFigures[];
    } = {},
  ) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'tessera_' });
    this.requests = new Counter({
      name: 'tessera_http_requests_total',
      help: 'Answers of the OAuth endpoints by endpoint, grant type (token endpoint) and HTTP status.',
      labelNames: ['endpoint', 'grant_type', 'status'],
      registers,
    });
    this.durations = new Histogram({
      name: 'tessera_http_request_duration_seconds',
      help: 'Time from a request read to its answer, by endpoint and grant type.',
      labelNames: ['endpoint', 'grant_type'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.reuses = new Counter({
      name: 'tessera_token_reuse_detected_total',
      help: 'Single-use items presented again (a refresh token or a code): their family was revoked.',
      labelNames: ['item'],
      registers,
    });
    this.throttleHits = new Counter({
      name: 'tessera_throttle_hits_total',
      help: 'Requests refused with 429 by a throttle, by throttle.',
      labelNames: ['throttle'],
      registers,
    });
    this.rotations = new Counter({
      name: 'tessera_signing_key_rotations_total',
      help: 'Signing key rotations this gateway took up since start.',
      registers,
    });
    this.signingKeyCreatedAt = options.signingKeyCreatedAt ?? (() => undefined);
    const keyCreatedAt = (): number | undefined => this.signingKeyCreatedAt();
    new Gauge({
      name: 'tessera_signing_key_age_seconds',
      help: 'Age of the key that signs tokens now.',
      registers,
      collect() {
        const createdAt = keyCreatedAt();
        if (createdAt !== undefined) this.set(Math.max(0, (Date.now() - createdAt) / 1000));
      },
    });
    this.batchSizes = new Histogram({
      name: 'tessera_worker_batch_size',
      help: 'Requests per task sent to the worker pool.',
      buckets: [1, 2, 4, 8, 16, 32, 64],
      registers,
    });
    gauge(this.registry, 'tessera_worker_requests_in_flight', 'Requests handed to the worker pool and not answered yet.', pool.inFlight);
    gauge(this.registry, 'tessera_worker_queue_depth', 'Requests waiting in the dispatcher for a batch slot.', pool.waiting);
    gauge(this.registry, 'tessera_worker_pool_queue_size', "Tasks waiting in the worker pool's own queue.", pool.poolQueue);
    gauge(
      this.registry,
      'tessera_worker_pool_utilization',
      "Share of the worker threads' time spent running tasks (0 to 1).",
      pool.utilization,
    );
    gauge(this.registry, 'tessera_worker_threads', 'Worker threads running.', pool.threads);
    const memoryStore = options.memoryStore;
    if (memoryStore !== undefined) {
      gauge(
        this.registry,
        'tessera_memory_store_records',
        'Records held by the embedded memory store (capped by store.maxRecords).',
        () => memoryStore.size,
      );
      gauge(
        this.registry,
        'tessera_memory_store_evicted_records',
        'Device-code records the memory store dropped at its cap since start.',
        () => memoryStore.evicted,
      );
    }
    const storeCommands = options.storeCommands;
    if (storeCommands !== undefined) registerStoreCommandMetrics(this.registry, storeCommands);
    const eventsDropped = options.eventsDropped;
    if (eventsDropped !== undefined) {
      new Gauge({
        name: 'tessera_events_dropped_total',
        help: 'Audit events dropped because a sink was not keeping up or not reachable, by sink.',
        labelNames: ['sink'],
        registers,
        collect() {
          for (const [sink, count] of eventsDropped()) this.labels(sink).set(count);
        },
      });
    }
  }

  /**
   * Replaces where the signing key age comes from (epoch ms of the signing key's creation, or
   * `undefined` when unknown): for key rotation, which knows when the key it made signs.
   */
  setSigningKeyCreatedAt(source: () => number | undefined): void {
    this.signingKeyCreatedAt = source;
  }

  readonly observeBatch = (size: number): void => {
    this.batchSizes.observe(size);
  };

  /** One answered request; `grantType` is `''` except at the token endpoint (a registered grant type). */
  observeRequest(endpoint: MetricsEndpoint, grantType: string, status: number, seconds: number): void {
    let byGrant = this.children.get(endpoint);
    if (byGrant === undefined) {
      byGrant = new Map();
      this.children.set(endpoint, byGrant);
    }
    let children = byGrant.get(grantType);
    if (children === undefined) {
      children = { duration: this.durations.labels(endpoint, grantType), byStatus: new Map() };
      byGrant.set(grantType, children);
    }
    let counter = children.byStatus.get(status);
    if (counter === undefined) {
      counter = this.requests.labels(endpoint, grantType, String(status));
      children.byStatus.set(status, counter);
    }
    counter.inc();
    children.duration.observe(seconds);
  }

  countReuse(item: ReusedItem): void {
    this.reuses.labels(item).inc();
  }

  countThrottleHit(throttle: ThrottleName): void {
    this.throttleHits.labels(throttle).inc();
  }

  countKeyRotation(): void {
    this.rotations.inc();
  }
}

function gauge(registry: Registry, name: string, help: string, read: () => number): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.set(read());
    },
  });
}

/**
 * `tessera_store_command_duration_seconds{command}` (a histogram) and
 * `tessera_store_command_errors_total{command}`, read at scrape time from the counters every
 * thread shares (workers/protocol/store_command_stats.ts): prom-client's own histogram cannot
 * take counts made on other threads, so these two are formatted here.
 */
function registerStoreCommandMetrics(registry: Registry, read: () => readonly StoreCommandFigures[]): void {
  const bounds = [...storeLatencyBuckets.map(String), '+Inf'];
  registry.registerMetric({
    name: 'tessera_store_command_duration_seconds',
    help: 'Store (Redis) command latency by command, from every thread of the gateway.',
    type: 'histogram',
    get: () => {
      const values: { metricName: string; labels: Record<string, string>; value: number }[] = [];
      for (const figure of read()) {
        let cumulative = 0;
        figure.buckets.forEach((count, b) => {
          cumulative += count;
          values.push({
            metricName: 'tessera_store_command_duration_seconds_bucket',
            labels: { le: bounds[b] as string, command: figure.command },
            value: cumulative,
          });
        });
        values.push({
          metricName: 'tessera_store_command_duration_seconds_sum',
          labels: { command: figure.command },
          value: figure.sumSeconds,
        });
        values.push({
          metricName: 'tessera_store_command_duration_seconds_count',
          labels: { command: figure.command },
          value: figure.count,
        });
      }
      return {
        name: 'tessera_store_command_duration_seconds',
        help: 'Store (Redis) command latency by command.',
        type: 'histogram',
        values,
        aggregator: 'sum',
      };
    },
    reset: () => {},
  } as unknown as Parameters<Registry['registerMetric']>[0]);
  new Counter({
    name: 'tessera_store_command_errors_total',
    help: 'Store (Redis) commands that failed (timeout, connection, refused write), by command.',
    labelNames: ['command'],
    registers: [registry],
    collect() {
      this.reset();
      for (const figure of read()) if (figure.errors > 0) this.labels(figure.command).inc(figure.errors);
    },
  });
}
