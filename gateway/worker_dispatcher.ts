import type { Logger } from 'pino';
import { Piscina } from 'piscina';
import { OAuthErrors } from '../workers/protocol/oauth_errors.js';
import { packMessage, unpackMessage, type TaskItem, type TokenTaskResult } from '../workers/protocol/token_task.js';
import type { Exchange } from './http/exchange.js';

export interface DispatcherOptions {
  threads: number;
  /** Requests in flight (queued or running) beyond which new ones get a fast 503. */
  maxQueue: number;
  /** Most requests in one task. */
  maxBatch?: number;
  /** Batches in flight per thread before new requests wait for one to come back. */
  batchesPerThread?: number;
  /** Told the size of every batch sent (metrics). */
  onBatch?: (size: number) => void;
  logger: Logger;
}

const unavailableResult: TokenTaskResult = [OAuthErrors.temporarilyUnavailable.status, OAuthErrors.temporarilyUnavailable.body, 1];
const serverErrorResult: TokenTaskResult = [OAuthErrors.serverError.status, OAuthErrors.serverError.body, null];

/** Where a result goes: straight out as the HTTP answer, or to a caller that continues. */
type Sink = Exchange | ((result: TokenTaskResult) => void);

function deliver(sink: Sink, result: TokenTaskResult): void {
  if (typeof sink === 'function') sink(result);
  else sink.sendJson(result[0], result[1], result[2] === null ? undefined : { retryAfter: result[2] });
}

/**
 * Hands token requests to the worker pool in batches: one message per batch instead of one per
 * request is what lifts throughput past a single event loop (bench/README.md has the figures).
 *
 * Batching adapts to load. Requests that arrive in one event-loop turn are flushed together on
 * `setImmediate`, split evenly over the threads; but while `batchesPerThread` batches per thread
 * are already out, new requests wait for the next one to come back, so batches grow exactly when
 * the per-message cost would otherwise dominate, and stay small (low latency) when idle.
 */
export class WorkerDispatcher {
  private exchanges: Sink[] = [];
  private items: TaskItem[] = [];
  private scheduled = false;
  private inFlight = 0;
  private batchesInFlight = 0;
  private drainWaiters: (() => void)[] = [];
  private readonly maxBatch: number;
  private readonly maxBatchesInFlight: number;

  constructor(
    private pool: Piscina,
    private readonly options: DispatcherOptions,
  ) {
    this.maxBatch = options.maxBatch ?? 64;
    this.maxBatchesInFlight = options.threads * (options.batchesPerThread ?? 2);
  }

  /**
   * Sends later batches to `next` and closes the previous pool once its running batches are done,
   * so a reload fails no request in flight.
   */
  async replacePool(next: Piscina): Promise<void> {
    const previous = this.pool;
    this.pool = next;
    await previous.close();
  }

  get currentPool(): Piscina {
    return this.pool;
  }

  get pending(): number {
    return this.inFlight;
  }

  /** Runs a task and hands its result to the caller instead of answering HTTP (login pages). */
  call(item: TaskItem): Promise<TokenTaskResult> {
    return new Promise((resolve) => this.submit(resolve, item));
  }

  submit(exchange: Sink, item: TaskItem): void {
    if (this.inFlight >= this.options.maxQueue) {
      deliver(exchange, unavailableResult);
      return;
    }
    this.inFlight++;
    this.exchanges.push(exchange);
    this.items.push(item);
    this.schedule();
  }

  /** Resolves when every submitted request has been answered. */
  drain(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private schedule(): void {
    if (!this.scheduled && this.items.length > 0 && this.batchesInFlight < this.maxBatchesInFlight) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const free = this.maxBatchesInFlight - this.batchesInFlight;
    const n = this.items.length;
    if (free <= 0 || n === 0) return;
    // As many batches as free slots allow, at least one per thread when there is enough work.
    const batches = Math.min(free, Math.max(Math.ceil(n / this.maxBatch), Math.min(this.options.threads, n)));
    const size = Math.min(this.maxBatch, Math.ceil(n / batches));
    let start = 0;
    for (let b = 0; b < batches && start < n; b++, start += size) {
      this.runBatch(this.exchanges.slice(start, start + size), this.items.slice(start, start + size));
    }
    this.exchanges = this.exchanges.slice(start);
    this.items = this.items.slice(start);
  };

  private runBatch(exchanges: Sink[], items: TaskItem[]): void {
    this.batchesInFlight++;
    this.options.onBatch?.(items.length);
    const task = packMessage(items);
    this.pool.run(Piscina.move(task)).then(
      (packed: Uint8Array) => {
        const results = unpackMessage<TokenTaskResult[]>(packed);
        for (let i = 0; i < exchanges.length; i++) deliver(exchanges[i] as Sink, results[i] ?? serverErrorResult);
        this.settle(exchanges.length);
      },
      (err: unknown) => {
        // A worker that died or threw outside a grant: this batch fails, the pool replaces the thread.
        this.options.logger.error({ err, requests: exchanges.length }, 'worker task failed');
        for (const exchange of exchanges) deliver(exchange, serverErrorResult);
        this.settle(exchanges.length);
      },
    );
  }

  private settle(count: number): void {
    this.batchesInFlight--;
    this.inFlight -= count;
    // Requests that waited for a free slot go now, as one larger batch.
    this.schedule();
    if (this.inFlight === 0 && this.drainWaiters.length > 0) {
      const waiters = this.drainWaiters;
      this.drainWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }
}
