import type { Piscina } from 'piscina';
import { MemoryStore } from '../../core/store/memory_store.js';
import type { AuditEvents } from '../observability/events/audit_events.js';
import { ServingState } from '../http/serving_state.js';
import type { KeyRing } from '../keys/key_ring.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { StoreOutageLog } from '../observability/store_outage_log.js';
import { WorkerDispatcher } from '../dispatch/worker_dispatcher.js';
import type { GatewayState } from './gateway_state.js';
import { signingKeyCreatedAt } from './start_keys.js';

/** What the routes and the reloads share: the dispatcher in front of the pool, the metrics, the drain. */
export interface GatewayServices {
  readonly dispatcher: WorkerDispatcher;
  readonly events: AuditEvents;
  readonly metrics: GatewayMetrics;
  readonly storeOutage: StoreOutageLog;
  /** Requests in flight and the drain (docs/operations.md, "Signals and shutdown"). */
  readonly serving: ServingState;
}

/** The dispatcher on the first pool, the metrics reading both, the store outage log, the serving state. */
export function buildServices(
  state: GatewayState,
  pool: Piscina,
  keys: KeyRing,
  events: AuditEvents,
  suspectThreads: Set<number>,
): GatewayServices {
  const { config, logger } = state;
  // The dispatcher and the metrics refer to each other: in-flight count one way, batch sizes the other.
  const dispatcher = new WorkerDispatcher(pool, {
    threads: config.workers.threads,
    maxQueue: config.workers.maxQueue,
    passwordLane: {
      concurrency: config.workers.passwordConcurrency,
      maxQueue: config.workers.passwordMaxQueue,
      shedDelayMs: config.workers.passwordShedDelayMs,
    },
    // A thread stuck past the validators' own time limit is terminated (docs/operations.md,
    // "Worker faults"); never under a second, so a loaded machine's slow event loop is not
    // mistaken for a stuck thread.
    stallTimeoutMs: Math.max(config.validatorTimeoutMs, 1000),
    suspectThreads,
    logger,
    onBatch: (size) => state.metrics?.observeBatch(size),
    onRefusal: (lane, reason) => state.metrics?.countRefusal(lane, reason),
  });
  const { store, stats } = state.storage;
  const serving = new ServingState();
  const metrics = new GatewayMetrics(
    {
      inFlight: () => dispatcher.pending,
      waiting: () => dispatcher.waiting,
      poolQueue: () => dispatcher.currentPool.queueSize,
      utilization: () => dispatcher.currentPool.utilization,
      threads: () => dispatcher.currentPool.threads.length,
    },
    {
      memoryStore: store instanceof MemoryStore ? store : undefined,
      signingKeyCreatedAt: signingKeyCreatedAt(keys, config.signing.keys[0]?.file),
      eventsDropped: () => events.droppedCounts(),
      storeCommands: () => stats.read(),
      requestsInFlight: () => serving.inFlight,
    },
  );
  state.metrics = metrics;
  // Applied when /metrics is rendered, to every series: with `management.onPublicPort` a scrape
  // reaches whichever process the connection landed on.
  if (state.processSlot !== undefined) metrics.registry.setDefaultLabels({ process: String(state.processSlot.index) });
  return { dispatcher, events, metrics, storeOutage: new StoreOutageLog(logger), serving };
}
