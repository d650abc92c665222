import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { storeLatencyBuckets, type StoreCommandFigures } from '../../wire/store_command_stats.js';
import type { ReusedItem } from '../../wire/task_facts.js';
import { bucketBounds, histogramValues, registerComputedMetric } from './computed_metrics.js';
import { RequestMetrics, type MetricsEndpoint } from './request_metrics.js';
import type { Lane, RefusalReason } from '../dispatch/worker_dispatcher.js';

export type { MetricsEndpoint };

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

/** What the client registry gauges read at scrape time (gateway/client_registry/client_registry.ts). */
export interface ClientRegistryGauges {
  readonly lookupsInFlight: number;
  readonly cachedClients: number;
  readonly cachedUnknownIds: number;
  /** Store-kept clients' CORS origins (gateway/client_registry/cors_origins.ts). */
  readonly origins: { readonly lookupsInFlight: number; readonly cachedOrigins: number };
}

/**
 * Prometheus metrics of one gateway (docs/operations.md, "Metrics"). Its own registry, not
 * prom-client's global one, so that several gateways in one process (tests, embedding) do not
 * collide. The per-request metrics are counted by {@link RequestMetrics}.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly requests: RequestMetrics;
  private readonly reuses: Counter<'item'>;
  private readonly throttleHits: Counter<'throttle'>;
  private readonly rotations: Counter;
  private readonly batchSizes: Histogram;
  private readonly refusals: Counter<'lane' | 'reason'>;
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
      /** Requests read and not answered yet, on every endpoint (gateway/http/serving_state.ts). */
      requestsInFlight?: () => number;
    } = {},
  ) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'tessera_' });
    this.requests = new RequestMetrics(this.registry);
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
    this.refusals = new Counter({
      name: 'tessera_worker_refusals_total',
      help: 'Requests answered 503 + Retry-After without being run, by dispatcher lane and reason (queue_full, lane_full, thread_stuck).',
      labelNames: ['lane', 'reason'],
      registers,
    });
    const requestsInFlight = options.requestsInFlight;
    if (requestsInFlight !== undefined) {
      gauge(
        this.registry,
        'tessera_http_requests_in_flight',
        'Requests read and not answered yet, on every endpoint (a graceful stop waits for them).',
        requestsInFlight,
      );
    }
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
   * The client registry's gauges (docs/operations.md, "Metrics"), once it is open: it starts after
   * these metrics, and only with `clientRegistry.store`.
   */
  watchClientRegistry(registry: ClientRegistryGauges): void {
    gauge(
      this.registry,
      'tessera_client_registry_lookups_in_flight',
      'Store lookups of clients not cached, running now (capped; past the cap such requests are answered 503).',
      () => registry.lookupsInFlight,
    );
    gauge(
      this.registry,
      'tessera_client_registry_cached_clients',
      'Store-kept clients in the registry cache (at most clientRegistry.cacheSize).',
      () => registry.cachedClients,
    );
    gauge(
      this.registry,
      'tessera_client_registry_cached_unknown_ids',
      'Client ids remembered as unknown (at most clientRegistry.negativeCacheSize).',
      () => registry.cachedUnknownIds,
    );
    gauge(
      this.registry,
      'tessera_client_registry_origin_lookups_in_flight',
      'Store lookups of CORS origins not cached, running now (capped; past the cap such requests are answered without CORS headers).',
      () => registry.origins.lookupsInFlight,
    );
    gauge(
      this.registry,
      'tessera_client_registry_cached_origins',
      'CORS origins remembered as allowed or not by store-kept clients (at most clientRegistry.negativeCacheSize).',
      () => registry.origins.cachedOrigins,
    );
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

  /** A request the dispatcher answered 503 without running it (gateway/dispatch/worker_dispatcher.ts). */
  countRefusal(lane: Lane, reason: RefusalReason): void {
    this.refusals.labels(lane, reason).inc();
  }

  /** One answered request; `grantType` is `''` except at the token endpoint (a registered grant type). */
  observeRequest(endpoint: MetricsEndpoint, grantType: string, status: number, seconds: number): void {
    this.requests.observe(endpoint, grantType, status, seconds);
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
 * thread shares (wire/store_command_stats.ts): prom-client's own histogram cannot
 * take counts made on other threads, so these two are formatted here.
 */
function registerStoreCommandMetrics(registry: Registry, read: () => readonly StoreCommandFigures[]): void {
  const bounds = bucketBounds(storeLatencyBuckets);
  registerComputedMetric(registry, {
    name: 'tessera_store_command_duration_seconds',
    help: 'Store (Redis) command latency by command, from every thread of the gateway.',
    type: 'histogram',
    values: () =>
      read().flatMap((figure) =>
        histogramValues('tessera_store_command_duration_seconds', { command: figure.command }, bounds, figure.buckets, figure.sumSeconds),
      ),
  });
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
