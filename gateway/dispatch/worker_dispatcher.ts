import type { Logger } from 'pino';
import {
  BatchState,
  heartbeatSlot,
  newBatchControl,
  stateSlot,
  threadSlot,
  withdrawBatch,
  type BatchTask,
} from '../../wire/batch_control.js';
import { OAuthErrors } from '../../core/oauth_errors.js';
import { mayRunAgainAfterStart } from '../../wire/rerun.js';
import { errorResult, packTaskItems, unpackMessage, type TaskItem, type TokenTaskResult } from '../../wire/token_task.js';
import type { Exchange } from '../http/exchange.js';

/**
 * What the dispatcher needs of a worker pool (Piscina has it): running a batch, its threads (to
 * terminate a stuck one), and closing it once a reload replaced it.
 */
export interface BatchPool {
  run(task: BatchTask, options: { transferList: ArrayBuffer[] }): Promise<Uint8Array>;
  readonly threads: readonly { readonly threadId: number; terminate(): Promise<number> }[];
  readonly queueSize: number;
  readonly utilization: number;
  close(): Promise<void>;
  destroy(): Promise<void>;
}

/**
 * Why a request was answered `503` + `Retry-After` without being run (metric
 * `tessera_worker_refusals_total`, docs/operations.md "Limits"): `queue_full`, more than
 * `workers.maxQueue` in flight; `lane_full`, its lane's waiting bound (the password lane);
 * `thread_stuck`, its thread stopped answering and the request cannot safely run again.
 */
export type RefusalReason = 'queue_full' | 'lane_full' | 'thread_stuck';

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
  /** Told of every request answered 503 without being run, with its lane and why (metrics). */
  onRefusal?: (lane: Lane, reason: RefusalReason) => void;
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
  /**
   * A thread whose heartbeat has not moved for this long is suspect: new batches avoid it and
   * the batches it has not begun go to the other threads (docs/operations.md, "Worker faults").
   * Default 150 (three missed heartbeats), never more than half of `stallTimeoutMs`.
   */
  suspectAfterMs?: number;
  /**
   * The threads new batches must avoid, kept up to date by the dispatcher; the pool's load
   * balancer reads it (gateway/dispatch/worker_pool.ts).
   */
  suspectThreads?: Set<number>;
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

/** A batch sent to the pool, until its result is delivered or its requests are sent elsewhere. */
interface WatchedBatch {
  readonly lane: LaneState;
  readonly control: Int32Array;
  readonly sinks: Sink[];
  readonly items: TaskItem[];
  readonly sentAt: number;
  lastBeat: number;
  lastMoved: number;
  /** Its thread was terminated by the watchdog. */
  stalled: boolean;
  /**
   * Its requests went back to the lane (they never started, or may run again): whatever the pool
   * says of it later is ignored, so each request is answered once.
   */
  withdrawn: boolean;
}

const unavailableResult: TokenTaskResult = errorResult(OAuthErrors.temporarilyUnavailable, 1);
const serverErrorResult: TokenTaskResult = errorResult(OAuthErrors.serverError);

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
  sinks: Sink[];
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
   * request, each paying a whole hand-off and its own store round trips
   * (docs/decisions/0023-password-lane-batches.md).
   */
  readonly minBatch: number;
  /** Most requests waiting in this lane before new ones get a 503. */
  readonly maxWaiting: number;
  /** How long that 503 is held before it is sent; 0: at once. */
  readonly shedDelayMs: number;
}

/** What the dispatcher holds right now, for tests and metrics: all zero once traffic stops. */
export interface DispatcherCounters {
  readonly inFlight: number;
  readonly waiting: number;
  readonly running: number;
  readonly batchesInFlight: number;
  readonly watchedBatches: number;
  readonly heldRefusals: number;
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
  // What the worker learned, for the request's audit events and log line (gateway/observability/endpoint_outcomes.ts).
  if (result.length === 5) sink.facts = result[4];
  sink.sendJson(result[0], result[1], result[2] === null ? undefined : { retryAfter: result[2] }, result[3] ?? undefined);
}

/** A client that went away before its request was sent: nothing to run, nothing to answer. */
function gone(sink: Sink): boolean {
  return typeof sink !== 'function' && !sink.open;
}

/**
 * Hands token requests to the worker pool in batches: one message per batch instead of one per
 * request is what lifts throughput past a single event loop (docs/decisions/0001-batches-across-the-thread-boundary.md).
 *
 * Batching adapts to load. Requests that arrive in one event-loop turn are flushed together on
 * `setImmediate`, split evenly over the threads; but while `batchesPerThread` batches per thread
 * are already out, new requests wait for the next one to come back, so batches grow exactly when
 * the per-message cost would otherwise dominate, and stay small (low latency) when idle.
 *
 * Every request handed in is answered exactly once, and every count returns to zero: a request
 * is always in exactly one place (its lane's queue, or one batch out on a thread) until it is
 * answered, and moves between them only here (test/gateway/dispatch/dispatcher_exactly_once.test.ts checks
 * it over random bursts, faults and disconnects).
 */
export class WorkerDispatcher {
  private readonly lanes: Record<Lane, LaneState>;
  private inFlight = 0;
  private drainWaiters: (() => void)[] = [];
  private readonly maxBatch: number;
  private readonly batchesPerThread: number;
  private readonly stallTimeoutMs: number;
  private readonly suspectAfterMs: number;
  /** Threads the watchdog finds silent now: the pool's balancer avoids them. */
  private readonly suspects: Set<number>;
  /** Threads the watchdog terminated: their batches' requests get 503, not 500. */
  private readonly terminated = new Set<number>();
  /** Requests already sent again once after a thread fault: never a second time. */
  private readonly ranAgain = new WeakSet<TaskItem>();
  private readonly watched = new Set<WatchedBatch>();
  private heldRefusals = 0;
  private watchdog: NodeJS.Timeout | undefined;
  /** Batches sent to each pool and not settled yet; a replaced pool ends when its count is 0. */
  private readonly poolBatches = new Map<BatchPool, PoolBatches>();

  constructor(
    private pool: BatchPool,
    private readonly options: DispatcherOptions,
  ) {
    this.maxBatch = options.maxBatch ?? 64;
    this.batchesPerThread = options.batchesPerThread ?? 2;
    this.stallTimeoutMs = options.stallTimeoutMs ?? 5000;
    this.suspectAfterMs = Math.min(options.suspectAfterMs ?? 150, this.stallTimeoutMs / 2);
    this.suspects = options.suspectThreads ?? new Set();
    const password = options.passwordLane ?? { concurrency: 4, maxQueue: 256 };
    const lane = (name: Lane, maxRunning: number, maxWaiting: number, shedDelayMs = 0): LaneState => {
      const state: LaneState = {
        name,
        sinks: [],
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
  async replacePool(next: BatchPool): Promise<void> {
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

  get currentPool(): BatchPool {
    return this.pool;
  }

  get pending(): number {
    return this.inFlight;
  }

  /** Requests waiting in the lanes for a batch slot (metrics). */
  get waiting(): number {
    return this.lanes.fast.items.length + this.lanes.password.items.length + this.lanes.store.items.length;
  }

  counters(): DispatcherCounters {
    const lanes = Object.values(this.lanes);
    return {
      inFlight: this.inFlight,
      waiting: this.waiting,
      running: lanes.reduce((n, lane) => n + lane.running, 0),
      batchesInFlight: lanes.reduce((n, lane) => n + lane.batchesInFlight, 0),
      watchedBatches: this.watched.size,
      heldRefusals: this.heldRefusals,
    };
  }

  /** Runs a task and hands its result to the caller instead of answering HTTP (login pages). */
  call(item: TaskItem): Promise<TokenTaskResult> {
    return new Promise((resolve) => this.submit(resolve, item));
  }

  submit(sink: Sink, item: TaskItem): void {
    const lane = this.lanes[laneOf(item)];
    // The lane's queue also holds, until the next flush, the requests about to take free slots.
    const freeSlots = Math.max(0, lane.maxRunning - lane.running);
    if (this.inFlight >= this.options.maxQueue) {
      this.refuse(sink, lane, 'queue_full');
      return;
    }
    if (lane.items.length >= lane.maxWaiting + freeSlots) {
      this.refuse(sink, lane, 'lane_full');
      return;
    }
    this.inFlight++;
    lane.sinks.push(sink);
    lane.items.push(item);
    this.schedule(lane);
  }

  /**
   * `503` + `Retry-After` for a request beyond its lane's bounds. A flood that ignores Retry-After
   * sends the next request as soon as the refusal arrives: answered at once, 512 flooding
   * connections made about 30,000 refusals a second, whose parsing, client authentication and
   * answers took the CPU the other lanes needed (docs/decisions/0009-hold-refusals-under-a-sign-in-flood.md). Held for the
   * lane's `shedDelayMs`, each flooding connection costs one refusal per delay and a timer.
   */
  private refuse(sink: Sink, lane: LaneState, reason: RefusalReason): void {
    this.options.onRefusal?.(lane.name, reason);
    if (lane.shedDelayMs <= 0 || this.heldRefusals >= maxHeldRefusals) {
      deliver(sink, unavailableResult);
      return;
    }
    this.heldRefusals++;
    setTimeout(() => {
      this.heldRefusals--;
      // An Exchange whose client went away in the meantime writes nothing.
      deliver(sink, unavailableResult);
    }, lane.shedDelayMs);
  }

  /** Resolves when every submitted request has been answered. */
  drain(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /**
   * Batches a lane may have out: per thread that answers. While a thread is suspect its own
   * batches stay counted, so the pool's other threads are never handed more than they run at
   * once and nothing waits in the pool's queue (where a withdrawal could not tell it from a
   * batch on the silent thread).
   */
  private maxBatchesInFlight(): number {
    return Math.max(1, this.options.threads - this.suspects.size) * this.batchesPerThread;
  }

  private schedule(lane: LaneState): void {
    if (!lane.scheduled && lane.items.length > 0 && lane.batchesInFlight < this.maxBatchesInFlight() && lane.running < lane.maxRunning) {
      lane.scheduled = true;
      setImmediate(lane.flush);
    }
  }

  private flush(lane: LaneState): void {
    lane.scheduled = false;
    const free = this.maxBatchesInFlight() - lane.batchesInFlight;
    const taken = Math.min(lane.items.length, lane.maxRunning - lane.running, free * this.maxBatch);
    if (free <= 0 || taken <= 0) return;
    const { sinks, items } = this.take(lane, taken);
    const n = items.length;
    if (n === 0) {
      // Every one of them had gone away: the next ones may go.
      this.schedule(lane);
      return;
    }
    // As many batches as free slots allow, at least one per thread when there is enough work; in
    // a bounded lane none smaller than its share of a thread (`minBatch`). What does not fit stays
    // queued for the next batch that comes back.
    const batches = Math.min(free, Math.max(Math.ceil(n / this.maxBatch), Math.min(this.options.threads, Math.ceil(n / lane.minBatch))));
    const size = Math.ceil(n / batches);
    for (let start = 0; start < n; start += size) {
      this.runBatch(lane, sinks.slice(start, start + size), items.slice(start, start + size));
    }
  }

  /**
   * The first `count` requests of the lane, less those whose clients went away while they waited:
   * those are counted down and never run. Only what is taken is looked at.
   */
  private take(lane: LaneState, count: number): { sinks: Sink[]; items: TaskItem[] } {
    const sinks = lane.sinks.splice(0, count);
    const items = lane.items.splice(0, count);
    if (!sinks.some(gone)) return { sinks, items };
    const liveSinks: Sink[] = [];
    const liveItems: TaskItem[] = [];
    for (let i = 0; i < sinks.length; i++) {
      if (gone(sinks[i] as Sink)) continue;
      liveSinks.push(sinks[i] as Sink);
      liveItems.push(items[i] as TaskItem);
    }
    this.inFlight -= sinks.length - liveSinks.length;
    this.notifyDrained();
    return { sinks: liveSinks, items: liveItems };
  }

  private runBatch(lane: LaneState, sinks: Sink[], items: TaskItem[]): void {
    lane.batchesInFlight++;
    lane.running += items.length;
    this.options.onBatch?.(items.length);
    const task: BatchTask = { batch: packTaskItems(items), control: newBatchControl() };
    const now = performance.now();
    const batch: WatchedBatch = {
      lane,
      control: new Int32Array(task.control),
      sinks,
      items,
      sentAt: now,
      lastBeat: -1,
      lastMoved: now,
      stalled: false,
      withdrawn: false,
    };
    this.watch(batch);
    this.runOnPool(task, [task.batch.buffer as ArrayBuffer]).then(
      (packed) => {
        if (batch.withdrawn) return;
        this.unwatch(batch);
        const results = unpackMessage<TokenTaskResult[]>(packed);
        for (let i = 0; i < sinks.length; i++) deliver(sinks[i] as Sink, results[i] ?? serverErrorResult);
        this.settle(lane, sinks.length, sinks.length);
      },
      (err: unknown) => {
        if (batch.withdrawn) return;
        this.unwatch(batch);
        if (Atomics.load(batch.control, stateSlot) === BatchState.finished) {
          // The task itself threw outside a grant and its thread lives on: this batch fails.
          this.options.logger.error({ err, requests: sinks.length }, 'worker task failed');
          for (const sink of sinks) deliver(sink, serverErrorResult);
          this.settle(lane, sinks.length, sinks.length);
          return;
        }
        this.recoverFromThreadFault(batch, err);
      },
    );
  }

  /**
   * The thread running (or holding) this batch died or was terminated, and the pool replaces it.
   * Requests that never started, and started ones that are safe to run twice
   * (wire/rerun.ts), go to the other threads, once; the others are answered: 503 with
   * `Retry-After` when their thread was stuck or they never ran, 500 when their thread died
   * under them (docs/operations.md, "Worker faults").
   */
  private recoverFromThreadFault(batch: WatchedBatch, err: unknown): void {
    const { lane, sinks, items } = batch;
    const started = Atomics.load(batch.control, stateSlot) === BatchState.started;
    const stuck = batch.stalled || !started || this.terminated.has(Atomics.load(batch.control, threadSlot));
    const againSinks: Sink[] = [];
    const againItems: TaskItem[] = [];
    const suspects = new Set<string>();
    let answered = 0;
    for (let i = 0; i < sinks.length; i++) {
      const item = items[i] as TaskItem;
      const safe = !started || mayRunAgainAfterStart(item);
      if (!safe) suspects.add(item.kind === 'token' ? item.grantType : item.kind);
      if (safe && !this.ranAgain.has(item)) {
        this.ranAgain.add(item);
        againSinks.push(sinks[i] as Sink);
        againItems.push(item);
      } else {
        if (stuck) this.options.onRefusal?.(lane.name, 'thread_stuck');
        deliver(sinks[i] as Sink, stuck ? unavailableResult : serverErrorResult);
        answered++;
      }
    }
    if (!batch.stalled) {
      // A stalled batch was logged when it was terminated; this is a thread that died, or another
      // batch of the stuck thread.
      this.options.logger.error(
        {
          err: stuck ? undefined : err,
          grantTypes: [...suspects],
          requests: sinks.length,
          sentAgain: againItems.length,
        },
        stuck ? 'worker thread terminated; its requests sent to other threads or answered 503' : 'worker thread died',
      );
    }
    this.requeue(lane, againSinks, againItems);
    this.settle(lane, sinks.length, answered);
  }

  /** Requests going back to the front of their lane: they have waited longest. */
  private requeue(lane: LaneState, sinks: Sink[], items: TaskItem[]): void {
    if (sinks.length === 0) return;
    lane.sinks.unshift(...sinks);
    lane.items.unshift(...items);
  }

  private watch(batch: WatchedBatch): void {
    this.watched.add(batch);
    if (this.watchdog === undefined) {
      this.watchdog = setInterval(this.checkHeartbeats, Math.max(10, Math.min(50, this.suspectAfterMs / 3)));
      this.watchdog.unref();
    }
  }

  private unwatch(batch: WatchedBatch): void {
    this.watched.delete(batch);
    if (this.watched.size === 0 && this.watchdog !== undefined) {
      clearInterval(this.watchdog);
      this.watchdog = undefined;
      // No batch is out: none can be on a silent or terminated thread.
      this.suspects.clear();
      this.terminated.clear();
    }
  }

  // Compares heartbeats between checks on this thread's own clock: a busy main thread sees a beat
  // that moved, never a false stall.
  private readonly checkHeartbeats = (): void => {
    const now = performance.now();
    const silent = new Set<number>();
    for (const batch of this.watched) {
      if (batch.stalled) continue;
      const beat = Atomics.load(batch.control, heartbeatSlot);
      if (Atomics.load(batch.control, stateSlot) !== BatchState.started || beat !== batch.lastBeat) {
        batch.lastBeat = beat;
        batch.lastMoved = now;
        continue;
      }
      const quiet = now - batch.lastMoved;
      if (quiet >= this.stallTimeoutMs) this.terminateThreadOf(batch);
      else if (quiet >= this.suspectAfterMs) silent.add(Atomics.load(batch.control, threadSlot));
    }
    this.suspects.clear();
    for (const thread of silent) this.suspects.add(thread);
    if (silent.size > 0) this.withdrawFromSilentThreads(now, silent);
  };

  /**
   * A thread's heartbeat stopped: a validator blocks it, and it may stay blocked until it is
   * terminated at `stallTimeoutMs`. Its batches must not wait that long (docs/operations.md,
   * "Worker faults"): every batch not begun for a while is taken back (a batch is begun within a
   * turn of its thread's event loop, so one still waiting is on a silent thread, or on one too
   * busy to begin it), and a begun batch on a silent thread whose requests may all run again is
   * taken back too, once; their requests go to the threads that answer. One compare-and-swap
   * (wire/batch_control.ts) keeps a late thread from running a withdrawn batch.
   */
  private withdrawFromSilentThreads(now: number, silent: ReadonlySet<number>): void {
    // No thread answers (the others are still starting): a withdrawn batch would only come back.
    if (this.pool.threads.every((worker) => silent.has(worker.threadId))) return;
    for (const batch of this.watched) {
      if (batch.stalled) continue;
      const state = Atomics.load(batch.control, stateSlot);
      let take = false;
      if (state === BatchState.queued) {
        take = now - batch.sentAt >= this.suspectAfterMs / 3 && withdrawBatch(batch.control);
      } else if (state === BatchState.started && silent.has(Atomics.load(batch.control, threadSlot))) {
        take = batch.items.every((item) => mayRunAgainAfterStart(item) && !this.ranAgain.has(item));
        if (take) for (const item of batch.items) this.ranAgain.add(item);
      }
      if (!take) continue;
      batch.withdrawn = true;
      this.unwatch(batch);
      this.requeue(batch.lane, batch.sinks, batch.items);
      batch.lane.batchesInFlight--;
      batch.lane.running -= batch.items.length;
      this.schedule(batch.lane);
    }
  }

  private terminateThreadOf(batch: WatchedBatch): void {
    // Every batch the thread runs stopped with it: all of them are the stuck thread's.
    const thread = Atomics.load(batch.control, threadSlot);
    const onThread = [...this.watched].filter(
      (b) => !b.stalled && Atomics.load(b.control, stateSlot) === BatchState.started && Atomics.load(b.control, threadSlot) === thread,
    );
    for (const b of onThread) b.stalled = true;
    this.terminated.add(thread);
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
    // The thread may be a replaced pool's, still finishing its batches (replacePool).
    const pools = new Set([this.pool, ...this.poolBatches.keys()]);
    for (const pool of pools) void pool.threads.find((worker) => worker.threadId === thread)?.terminate();
  }

  /** A batch is done with: `answered` of its requests were answered, the rest went back to the lane. */
  private settle(lane: LaneState, count: number, answered: number): void {
    lane.batchesInFlight--;
    lane.running -= count;
    this.inFlight -= answered;
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
