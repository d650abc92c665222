import type { Logger } from 'pino';
import { Piscina } from 'piscina';
import { BatchState, heartbeatSlot, newBatchControl, stateSlot, type BatchTask } from '../workers/protocol/batch_control.js';
import { OAuthErrors } from '../workers/protocol/oauth_errors.js';
import { mayRunAgainAfterStart } from '../workers/protocol/rerun.js';
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
  /**
   * A thread whose heartbeat has not moved for this long while it runs a batch is terminated and
   * replaced (the gateway passes `validatorTimeoutMs`). Default 5000.
   */
  stallTimeoutMs?: number;
  logger: Logger;
}

/** A batch out on a thread, as the watchdog sees it. */
interface WatchedBatch {
  readonly control: Int32Array;
  readonly abort: AbortController;
  readonly items: readonly TaskItem[];
  lastBeat: number;
  lastMoved: number;
  /** Terminated by the watchdog. */
  stalled: boolean;
}

// Piscina's rejection of the other batches on a thread it terminated (Errors.ThreadTermination).
const threadTerminationMessage = 'Terminating worker thread';

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
  private readonly stallTimeoutMs: number;
  /** Requests already sent again once after a thread fault: never a second time. */
  private readonly ranAgain = new WeakSet<TaskItem>();
  private readonly watched = new Set<WatchedBatch>();
  private watchdog: NodeJS.Timeout | undefined;

  constructor(
    private pool: Piscina,
    private readonly options: DispatcherOptions,
  ) {
    this.maxBatch = options.maxBatch ?? 64;
    this.maxBatchesInFlight = options.threads * (options.batchesPerThread ?? 2);
    this.stallTimeoutMs = options.stallTimeoutMs ?? 5000;
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
    const task: BatchTask = { batch: packMessage(items), control: newBatchControl() };
    const watched: WatchedBatch = {
      control: new Int32Array(task.control),
      abort: new AbortController(),
      items,
      lastBeat: -1,
      lastMoved: performance.now(),
      stalled: false,
    };
    this.watch(watched);
    this.pool.run(task, { transferList: [task.batch.buffer as ArrayBuffer], signal: watched.abort.signal }).then(
      (packed: Uint8Array) => {
        this.unwatch(watched);
        const results = unpackMessage<TokenTaskResult[]>(packed);
        for (let i = 0; i < exchanges.length; i++) deliver(exchanges[i] as Sink, results[i] ?? serverErrorResult);
        this.settle(exchanges.length);
      },
      (err: unknown) => {
        this.unwatch(watched);
        if (Atomics.load(watched.control, stateSlot) === BatchState.finished) {
          // The task itself threw outside a grant and its thread lives on: this batch fails.
          this.options.logger.error({ err, requests: exchanges.length }, 'worker task failed');
          for (const exchange of exchanges) deliver(exchange, serverErrorResult);
          this.settle(exchanges.length);
          return;
        }
        this.recoverFromThreadFault(watched, exchanges, err);
      },
    );
  }

  /**
   * The thread running (or holding) this batch died or was terminated, and the pool replaces it.
   * Requests that never started, and started ones that are safe to run twice
   * (workers/protocol/rerun.ts), go to the other threads, once; the others are answered: 503 with
   * `Retry-After` when their thread was stuck, 500 when it died (docs/operations.md, "Worker faults").
   */
  private recoverFromThreadFault(watched: WatchedBatch, exchanges: Sink[], err: unknown): void {
    const started = Atomics.load(watched.control, stateSlot) !== BatchState.queued;
    const stuck = watched.stalled || (err instanceof Error && err.message === threadTerminationMessage);
    const againSinks: Sink[] = [];
    const againItems: TaskItem[] = [];
    const suspects = new Set<string>();
    let answered = 0;
    for (let i = 0; i < exchanges.length; i++) {
      const item = watched.items[i] as TaskItem;
      const safe = !started || mayRunAgainAfterStart(item);
      if (!safe) suspects.add(item.kind === 'token' ? item.grantType : item.kind);
      if (safe && !this.ranAgain.has(item)) {
        this.ranAgain.add(item);
        againSinks.push(exchanges[i] as Sink);
        againItems.push(item);
      } else {
        deliver(exchanges[i] as Sink, stuck ? unavailableResult : serverErrorResult);
        answered++;
      }
    }
    if (!watched.stalled) {
      // A stalled batch was logged when it was terminated; this is a thread that died, or another
      // batch of the stuck thread.
      this.options.logger.error(
        {
          err: stuck ? undefined : err,
          grantTypes: [...suspects],
          requests: exchanges.length,
          sentAgain: againItems.length,
        },
        stuck ? 'worker thread terminated; its requests sent to other threads or answered 503' : 'worker thread died',
      );
    }
    // First in line: they have waited longest.
    this.exchanges.unshift(...againSinks);
    this.items.unshift(...againItems);
    this.batchesInFlight--;
    this.inFlight -= answered;
    this.schedule();
    this.notifyDrained();
  }

  private watch(batch: WatchedBatch): void {
    this.watched.add(batch);
    if (this.watchdog === undefined) {
      this.watchdog = setInterval(this.checkHeartbeats, Math.max(10, Math.min(250, this.stallTimeoutMs / 4)));
      this.watchdog.unref();
    }
  }

  private unwatch(batch: WatchedBatch): void {
    this.watched.delete(batch);
    if (this.watched.size === 0 && this.watchdog !== undefined) {
      clearInterval(this.watchdog);
      this.watchdog = undefined;
    }
  }

  // Compares heartbeats between checks on this thread's own clock: a busy main thread sees a beat
  // that moved, never a false stall.
  private readonly checkHeartbeats = (): void => {
    const now = performance.now();
    for (const batch of this.watched) {
      if (batch.stalled) continue;
      const beat = Atomics.load(batch.control, heartbeatSlot);
      if (Atomics.load(batch.control, stateSlot) !== BatchState.started || beat !== batch.lastBeat) {
        batch.lastBeat = beat;
        batch.lastMoved = now;
      } else if (now - batch.lastMoved >= this.stallTimeoutMs) {
        batch.stalled = true;
        const suspects = new Set(
          batch.items.filter((item) => !mayRunAgainAfterStart(item)).map((item) => (item.kind === 'token' ? item.grantType : item.kind)),
        );
        this.options.logger.error(
          { grantTypes: [...suspects], requests: batch.items.length, stallTimeoutMs: this.stallTimeoutMs },
          'worker thread stopped answering (a validator blocking it?); terminating and replacing it',
        );
        // Piscina terminates the thread running an aborted task and starts a new one.
        batch.abort.abort();
      }
    }
  };

  private settle(count: number): void {
    this.batchesInFlight--;
    this.inFlight -= count;
    // Requests that waited for a free slot go now, as one larger batch.
    this.schedule();
    this.notifyDrained();
  }

  private notifyDrained(): void {
    if (this.inFlight === 0 && this.drainWaiters.length > 0) {
      const waiters = this.drainWaiters;
      this.drainWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }
}
