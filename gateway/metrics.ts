import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Prometheus metrics of one gateway. Its own registry, not prom-client's global one, so that
 * several gateways in one process (tests, embedding) do not collide.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly tokenResponses: Counter<'status'>;
  // Children cached per status: a label lookup per request would cost more than the increment.
  private readonly byStatus = new Map<number, Counter.Internal>();

  private readonly batchSizes: Histogram;

  /** `memoryStore`: the embedded store's record count and evictions, when it is the store. */
  constructor(inFlight: () => number, memoryStore?: { readonly size: number; readonly evicted: number }) {
    this.batchSizes = new Histogram({
      name: 'tessera_worker_batch_size',
      help: 'Requests per task sent to the worker pool.',
      buckets: [1, 2, 4, 8, 16, 32, 64],
      registers: [this.registry],
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'tessera_' });
    this.tokenResponses = new Counter({
      name: 'tessera_token_responses_total',
      help: 'Responses of the token endpoint by HTTP status.',
      labelNames: ['status'],
      registers: [this.registry],
    });
    new Gauge({
      name: 'tessera_worker_requests_in_flight',
      help: 'Token requests handed to the worker pool and not answered yet.',
      registers: [this.registry],
      collect() {
        this.set(inFlight());
      },
    });
    if (memoryStore !== undefined) {
      new Gauge({
        name: 'tessera_memory_store_records',
        help: 'Records held by the embedded memory store (capped by store.maxRecords).',
        registers: [this.registry],
        collect() {
          this.set(memoryStore.size);
        },
      });
      new Gauge({
        name: 'tessera_memory_store_evicted_records',
        help: 'Device-code records the memory store dropped at its cap since start.',
        registers: [this.registry],
        collect() {
          this.set(memoryStore.evicted);
        },
      });
    }
  }

  readonly observeBatch = (size: number): void => {
    this.batchSizes.observe(size);
  };

  readonly countTokenResponse = (status: number): void => {
    let child = this.byStatus.get(status);
    if (child === undefined) {
      child = this.tokenResponses.labels(String(status));
      this.byStatus.set(status, child);
    }
    child.inc();
  };
}
