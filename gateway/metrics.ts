import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';

/**
 * Prometheus metrics of one gateway. Its own registry, not prom-client's global one, so that
 * several gateways in one process (tests, embedding) do not collide.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly tokenResponses: Counter<'status'>;
  // Children cached per status: a label lookup per request would cost more than the increment.
  private readonly byStatus = new Map<number, Counter.Internal>();

  constructor(inFlight: () => number) {
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
  }

  readonly countTokenResponse = (status: number): void => {
    let child = this.byStatus.get(status);
    if (child === undefined) {
      child = this.tokenResponses.labels(String(status));
      this.byStatus.set(status, child);
    }
    child.inc();
  };
}
