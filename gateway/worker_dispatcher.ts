import type { Logger } from 'pino';
import { Piscina } from 'piscina';
import { BatchState, heartbeatSlot, newBatchControl, stateSlot, threadSlot, type BatchTask } from '../workers/protocol/batch_control.js';
import { OAuthErrors } from '../workers/protocol/oauth_errors.js';
import { mayRunAgainAfterStart } from '../workers/protocol/rerun.js';
import { packTaskItems, unpackMessage, type TaskItem, type TokenTaskResult } from '../workers/protocol/token_task.js';
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
   * The password lane's bounds (docs/operations.md, "Lanes"): password checks running at once,
   * and waiting, beyond which a password request gets a 503, held `shedDelayMs` before it is sent.
   * Defaults 4, 256 and 0 (the gateway passes `workers.passwordShedDelayMs`, default 1000).
   */
  passwordLane?: { readonly concurrency: number; readonly maxQueue: number; readonly shedDelayMs?: number };
  /**
   * A thread whose heartbeat has not moved for this long while it runs a batch is terminated and
   * replaced (the gateway passes `validatorTimeoutMs`). Default 5000.
   */
  stallTimeoutMs?: number;
  logger: Logger;
}

/** What one pool holds of the dispatcher's batches ({@link WorkerDispatcher.replacePool}). */
interface PoolBatches {
  count: number;
  /** Called when `count` comes back to 0 (set while a replacement waits). */
  settled: (() => void) | undefined;
}

/**
 * How long a replaced pool may keep its batches: longer than any batch that is not stuck (store
 * calls are bounded by `commandTimeoutMs`, validators by `validatorTimeoutMs`); Piscina's own
 * `closeTimeout` default.
 */
const replacedPoolGraceMs = 30_000;

/** A batch out on a thread, as the watchdog sees it. */
interface WatchedBatch {
  readonly control: Int32Array;
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

/**
 * Requests are sent to the workers in three lanes, each with its own queue and its own batches,
 * so that no request waits for another kind's work (docs/operations.md, "Lanes"):
 *
 * - `fast`: `client_credentials`, which touches no store: never in a batch that waits for Redis;
 * - `password`: the password grant and the login pages' sign-ins, each an argon2 verification
 *   of 10-15 ms of CPU: bounded, so a flood of sign-ins queues only behind itself;
 * - `store`: every other grant and endpoint, which wait for the store.
 */
export type Lane = 'fast' | 'password' | 'store';

export function laneOf(item: TaskItem): Lane {
  if (item.kind === 'login') return 'password';
  if (item.kind !== 'token') return 'store';
  // A client assertion and a DPoP proof spend their jti in the store (docs/architecture.md,
  // "Client assertions"; RFC 9449 §11.1): such a request waits for Redis like any store-bound one.
  if (item.grantType === 'client_credentials') return item.clientAssertion === undefined && item.dpop === undefined ? 'fast' : 'store';
  return item.grantType === 'password' ? 'password' : 'store';
}

/** One lane's queue and what it has out on the threads. */
interface LaneState {
  readonly name: Lane;
  exchanges: Sink[];
  items: TaskItem[];
  scheduled: boolean;
  /** This lane's flush, made once: scheduling allocates nothing per turn. */
  flush: () => void;
  batchesInFlight: number;
  /** Requests of this lane sent and not answered yet. */
  running: number;
  /** Most requests of this lane out on the threads at once; `Infinity` but for the password lane. */
  readonly maxRunning: number;
  /**
   * Fewest requests a batch of this lane is split down to: 1, but for a bounded lane its running
   * bound over the threads. The slots of a bounded lane free up a batch at a time; split one per
   * thread, a freed pair went out as two batches of one, and from then on every batch held one
   * request, each paying a whole hand-off and its own store round trips (bench/README.md, "The
   * password lane's batches").
   */
  readonly minBatch: number;
  /** Most requests waiting in this lane before new ones get a 503. */
  readonly maxWaiting: number;
  /** How long that 503 is held before it is sent; 0: at once. */
  readonly shedDelayMs: number;
}

/**
 * Refusals held at once, over all lanes. Beyond it a refusal is sent at once: holding one costs a
 * timer and the connection's memory, and an attacker with more connections than this gets answers
 * as fast as without the delay, no faster.
 */
const maxHeldRefusals = 8192;

/** Where a result goes: straight out as the HTTP answer, or to a caller that continues. */
export type Sink = Exchange | ((result: TokenTaskResult) => void);

export function deliver(sink: Sink, result: TokenTaskResult): void {
  if (typeof sink === 'function') {
    sink(result);
    return;
  }
  // What the worker learned, for the request's audit events and log line (gateway/endpoint_outcomes.ts).
  if (result.length === 4) sink.facts = result[3];
  sink.sendJson(result[0], result[1], result[2] === null ? undefined : { retryAfter: result[2] });
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
  private readonly lanes: Record<Lane, LaneState>;
  private inFlight = 0;
  private drainWaiters: (() => void)[] = [];
  private readonly maxBatch: number;
  private readonly maxBatchesInFlight: number;
  private readonly stallTimeoutMs: number;
  /** Requests already sent again once after a thread fault: never a second time. */
  private readonly ranAgain = new WeakSet<TaskItem>();
  private readonly watched = new Set<WatchedBatch>();
  private heldRefusals = 0;
  private watchdog: NodeJS.Timeout | undefined;
  /** Batches sent to each pool and not settled yet; a replaced pool ends when its count is 0. */
  private readonly poolBatches = new Map<Piscina, PoolBatches>();

  constructor(
    private pool: Piscina,
    private readonly options: DispatcherOptions,
  ) {
    this.maxBatch = options.maxBatch ?? 64;
    this.maxBatchesInFlight = options.threads * (options.batchesPerThread ?? 2);
    this.stallTimeoutMs = options.stallTimeoutMs ?? 5000;
    const password = options.passwordLane ?? { concurrency: 4, maxQueue: 256 };
    const lane = (name: Lane, maxRunning: number, maxWaiting: number, shedDelayMs = 0): LaneState => {
      const state: LaneState = {
        name,
        exchanges: [],
        items: [],
        scheduled: false,
        flush: () => this.flush(state),
        batchesInFlight: 0,
        running: 0,
        maxRunning,
        minBatch: Number.isFinite(maxRunning) ? Math.max(1, Math.ceil(maxRunning / options.threads)) : 1,
        maxWaiting,
        shedDelayMs,
      };
      return state;
    };
    this.lanes = {
      fast: lane('fast', Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY),
      password: lane('password', password.concurrency, password.maxQueue, password.shedDelayMs),
      store: lane('store', Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY),
    };
  }

  /**
   * Sends later batches to `next` and ends the previous pool once every batch it holds has settled,
   * so a reload fails no request in flight (docs/operations.md, "Reload").
   *
   * Not Piscina's `close()` alone: in piscina 5.3 it registers its "worker done" check once per
   * thread plus once more, and counts calls rather than distinct threads, so the first thread to
   * finish its last task counts threads + 1 times and `close()` goes on to `destroy()` while the
   * other threads still hold batches. `destroy()` terminates them: a batch that had finished on
   * its thread but whose answer had not arrived yet failed as a task error (500), the others as a
   * terminated thread's (503 or sent again). Its `closeTimeout` (30 s) ends in `destroy()` too.
   * The dispatcher knows what it sent to each pool and waits for that instead.
   */
  async replacePool(next: Piscina): Promise<void> {
    const previous = this.pool;
    this.pool = next;
    const out = this.poolBatches.get(previous);
    if (out !== undefined && out.count > 0) {
      // Bounded: a batch stuck on one of the old threads must not keep the old pool forever;
      // whatever it still holds then goes through recoverFromThreadFault.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, replacedPoolGraceMs);
        timer.unref();
        out.settled = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.poolBatches.delete(previous);
    // Nothing runs on it any longer: its threads end at once.
    await previous.destroy();
  }

  /** Runs a batch on the current pool, counted against that pool for {@link replacePool}. */
  private runOnPool(task: BatchTask, transferList: ArrayBuffer[]): Promise<Uint8Array> {
    const pool = this.pool;
    let out = this.poolBatches.get(pool);
    if (out === undefined) {
      out = { count: 0, settled: undefined };
      this.poolBatches.set(pool, out);
    }
    const counted = out;
    counted.count++;
    const done = (): void => {
      counted.count--;
      if (counted.count === 0) counted.settled?.();
    };
    const running = pool.run(task, { transferList }) as Promise<Uint8Array>;
    running.then(done, done);
    return running;
  }

  get currentPool(): Piscina {
    return this.pool;
  }

  get pending(): number {
    return this.inFlight;
  }

  /** Requests waiting in the lanes for a batch slot (metrics). */
  get waiting(): number {
    return this.lanes.fast.items.length + this.lanes.password.items.length + this.lanes.store.items.length;
  }

  /** Runs a task and hands its result to the caller instead of answering HTTP (login pages). */
  call(item: TaskItem): Promise<TokenTaskResult> {
    return new Promise((resolve) => this.submit(resolve, item));
  }

  submit(exchange: Sink, item: TaskItem): void {
    const lane = this.lanes[laneOf(item)];
    // The lane's queue also holds, until the next flush, the requests about to take free slots.
    const freeSlots = Math.max(0, lane.maxRunning - lane.running);
    if (this.inFlight >= this.options.maxQueue || lane.items.length >= lane.maxWaiting + freeSlots) {
      this.refuse(exchange, lane);
      return;
    }
    this.inFlight++;
    lane.exchanges.push(exchange);
    lane.items.push(item);
    this.schedule(lane);
  }

  /**
   * `503` + `Retry-After` for a request beyond its lane's bounds. A flood that ignores Retry-After
   * sends the next request as soon as the refusal arrives: answered at once, 512 flooding
   * connections made about 30,000 refusals a second, whose parsing, client authentication and
   * answers took the CPU the other lanes needed (bench/README.md, "sign-in flood"). Held for the
   * lane's `shedDelayMs`, each flooding connection costs one refusal per delay and a timer.
   */
  private refuse(exchange: Sink, lane: LaneState): void {
    if (lane.shedDelayMs <= 0 || this.heldRefusals >= maxHeldRefusals) {
      deliver(exchange, unavailableResult);
      return;
    }
    this.heldRefusals++;
    setTimeout(() => {
      this.heldRefusals--;
      // An Exchange whose client went away in the meantime writes nothing.
      deliver(exchange, unavailableResult);
    }, lane.shedDelayMs);
  }

  /** Resolves when every submitted request has been answered. */
  drain(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private schedule(lane: LaneState): void {
    if (!lane.scheduled && lane.items.length > 0 && lane.batchesInFlight < this.maxBatchesInFlight && lane.running < lane.maxRunning) {
      lane.scheduled = true;
      setImmediate(lane.flush);
    }
  }

  private flush(lane: LaneState): void {
    lane.scheduled = false;
    const free = this.maxBatchesInFlight - lane.batchesInFlight;
    const n = Math.min(lane.items.length, lane.maxRunning - lane.running);
    if (free <= 0 || n <= 0) return;
    // As many batches as free slots allow, at least one per thread when there is enough work; in
    // a bounded lane none smaller than its share of a thread (`minBatch`).
    const batches = Math.min(free, Math.max(Math.ceil(n / this.maxBatch), Math.min(this.options.threads, Math.ceil(n / lane.minBatch))));
    const size = Math.min(this.maxBatch, Math.ceil(n / batches));
    let start = 0;
    for (let b = 0; b < batches && start < n; b++, start += size) {
      const end = Math.min(start + size, n);
      this.runBatch(lane, lane.exchanges.slice(start, end), lane.items.slice(start, end));
    }
    lane.exchanges = lane.exchanges.slice(n);
    lane.items = lane.items.slice(n);
  }

  private runBatch(lane: LaneState, exchanges: Sink[], items: TaskItem[]): void {
    lane.batchesInFlight++;
    lane.running += items.length;
    this.options.onBatch?.(items.length);
    const task: BatchTask = { batch: packTaskItems(items), control: newBatchControl() };
    const watched: WatchedBatch = {
      control: new Int32Array(task.control),
      items,
      lastBeat: -1,
      lastMoved: performance.now(),
      stalled: false,
    };
    this.watch(watched);
    this.runOnPool(task, [task.batch.buffer as ArrayBuffer]).then(
      (packed: Uint8Array) => {
        this.unwatch(watched);
        const results = unpackMessage<TokenTaskResult[]>(packed);
        for (let i = 0; i < exchanges.length; i++) deliver(exchanges[i] as Sink, results[i] ?? serverErrorResult);
        this.settle(lane, exchanges.length);
      },
      (err: unknown) => {
        this.unwatch(watched);
        if (Atomics.load(watched.control, stateSlot) === BatchState.finished) {
          // The task itself threw outside a grant and its thread lives on: this batch fails.
          this.options.logger.error({ err, requests: exchanges.length }, 'worker task failed');
          for (const exchange of exchanges) deliver(exchange, serverErrorResult);
          this.settle(lane, exchanges.length);
          return;
        }
        this.recoverFromThreadFault(lane, watched, exchanges, err);
      },
    );
  }

  /**
   * The thread running (or holding) this batch died or was terminated, and the pool replaces it.
   * Requests that never started, and started ones that are safe to run twice
   * (workers/protocol/rerun.ts), go to the other threads, once; the others are answered: 503 with
   * `Retry-After` when their thread was stuck, 500 when it died (docs/operations.md, "Worker faults").
   */
  private recoverFromThreadFault(lane: LaneState, watched: WatchedBatch, exchanges: Sink[], err: unknown): void {
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
    lane.exchanges.unshift(...againSinks);
    lane.items.unshift(...againItems);
    lane.batchesInFlight--;
    lane.running -= exchanges.length;
    this.inFlight -= answered;
    this.schedule(lane);
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
        // Every batch the thread runs stopped with it: all of them are the stuck thread's.
        const thread = Atomics.load(batch.control, threadSlot);
        const onThread = [...this.watched].filter((b) => !b.stalled && Atomics.load(b.control, threadSlot) === thread);
        for (const b of onThread) b.stalled = true;
        const suspects = new Set(
          onThread
            .flatMap((b) => b.items)
            .filter((item) => !mayRunAgainAfterStart(item))
            .map((item) => (item.kind === 'token' ? item.grantType : item.kind)),
        );
        this.options.logger.error(
          { grantTypes: [...suspects], requests: onThread.reduce((n, b) => n + b.items.length, 0), stallTimeoutMs: this.stallTimeoutMs },
          'worker thread stopped answering (a validator blocking it?); terminating and replacing it',
        );
        // Piscina replaces a thread that exits and fails the tasks it held, which then go through
        // recoverFromThreadFault as a stuck thread's (503, or sent to another thread).
        void this.pool.threads.find((worker) => worker.threadId === thread)?.terminate();
      }
    }
  };

  private settle(lane: LaneState, count: number): void {
    lane.batchesInFlight--;
    lane.running -= count;
    this.inFlight -= count;
    // Requests that waited for a free slot go now, as one larger batch.
    this.schedule(lane);
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
