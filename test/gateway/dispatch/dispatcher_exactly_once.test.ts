// The dispatcher's promise (gateway/dispatch/worker_dispatcher.ts): every request handed to it is answered
// exactly once, with its own answer, and every count returns to zero once traffic stops; no
// request that may not run twice (a refresh, a code, a password check) ever starts twice.
//
// Checked over random scenarios with fast-check: arrival bursts of up to 5,000 requests in all
// three lanes, random batch, queue and lane limits, and a model pool whose threads answer, answer
// late, leave an answer out, throw, die, or stall (stop beating and stop taking work) for a random
// time, some long enough to be terminated; clients go away while they wait. The model pool keeps
// Piscina's contract as the dispatcher sees it (tasks on threads, a thread's tasks fail together
// when it ends, a terminated thread is replaced) and runs the real batch control block
// (wire/batch_control.ts) the way the real worker does. The real pool and the real
// worker are exercised over HTTP by test/e2e/burst.test.ts and test/gateway/dispatch/worker_faults.test.ts.
import t from 'tap';
import fc from 'fast-check';
import { pino } from 'pino';
import type { Exchange } from '../../../gateway/http/exchange.js';
import { laneOf, WorkerDispatcher, type BatchPool, type Sink } from '../../../gateway/dispatch/worker_dispatcher.js';
import { BatchState, claimBatch, heartbeatSlot, stateSlot, type BatchTask } from '../../../wire/batch_control.js';
import { mayRunAgainAfterStart } from '../../../wire/rerun.js';
import type { ErrorCode } from '../../../core/oauth_errors.js';
import { packMessage, unpackMessage, unpackTaskItems, type TaskItem, type TokenTaskResult } from '../../../wire/token_task.js';

type Fate = 'ok' | 'late' | 'short' | 'throw' | 'die' | 'stall';

interface ModelTask {
  readonly task: BatchTask;
  readonly control: Int32Array;
  readonly resolve: (packed: Uint8Array) => void;
  readonly reject: (err: Error) => void;
  thread: ModelThread | undefined;
  done: boolean;
}

/** One worker thread of the model pool. */
class ModelThread {
  readonly tasks = new Set<ModelTask>();
  alive = true;
  /** Until when it neither beats nor begins work; 0: it runs. */
  stalledUntil = 0;
  private readonly beating: NodeJS.Timeout;

  constructor(
    readonly threadId: number,
    private readonly pool: ModelPool,
  ) {
    // The real worker's heartbeat (workers/thread/heartbeat.ts), which a blocked thread cannot move.
    this.beating = setInterval(() => {
      if (!this.alive || this.stalled()) return;
      for (const task of this.tasks)
        if (Atomics.load(task.control, stateSlot) === BatchState.started) Atomics.add(task.control, heartbeatSlot, 1);
    }, 10);
    this.beating.unref();
  }

  stalled(): boolean {
    return this.stalledUntil > performance.now();
  }

  get currentUsage(): number {
    return this.tasks.size;
  }

  accept(task: ModelTask): void {
    task.thread = this;
    this.tasks.add(task);
    setImmediate(() => this.begin(task));
  }

  private begin(task: ModelTask): void {
    if (!this.alive || task.done) return;
    if (this.stalled()) {
      setTimeout(() => this.begin(task), this.stalledUntil - performance.now() + 1);
      return;
    }
    if (!claimBatch(task.control, this.threadId)) {
      // Withdrawn by the dispatcher: skipped, as the real worker does.
      this.finish(task, () => task.resolve(packMessage([])));
      return;
    }
    const items = unpackTaskItems(task.task.batch);
    for (const item of items)
      this.pool.executions.set(item.params.id as string, (this.pool.executions.get(item.params.id as string) ?? 0) + 1);
    const fate = this.pool.nextFate();
    const answers = (): Uint8Array =>
      packMessage(items.map((item): TokenTaskResult => [200, JSON.stringify({ id: item.params.id }), null, null]));
    switch (fate) {
      case 'ok': {
        const delay = this.pool.nextDelay(6);
        if (delay < 4) setImmediate(() => this.finish(task, () => task.resolve(answers())));
        else setTimeout(() => this.finish(task, () => task.resolve(answers())), delay - 3);
        return;
      }
      case 'late':
        setTimeout(() => this.finish(task, () => task.resolve(answers())), 20 + this.pool.nextDelay(150));
        return;
      case 'short':
        setTimeout(() => this.finish(task, () => task.resolve(packMessage(unpackMessage<TokenTaskResult[]>(answers()).slice(0, -1)))), 1);
        return;
      case 'throw':
        setTimeout(() => this.finish(task, () => task.reject(new Error('the task threw'))), 1);
        return;
      case 'die':
        setTimeout(() => this.end(new Error('worker exited')), 1);
        return;
      case 'stall': {
        // Blocked by a "validator": no beat, no new work; the batch finishes if it is not terminated first.
        const ms = 30 + this.pool.nextDelay(270);
        this.stalledUntil = performance.now() + ms;
        setTimeout(() => this.finish(task, () => task.resolve(answers())), ms);
        return;
      }
    }
  }

  private finish(task: ModelTask, settle: () => void): void {
    if (!this.alive || task.done) return;
    task.done = true;
    this.tasks.delete(task);
    // Set before the answer reaches the dispatcher, as the worker's `finally` does.
    if (Atomics.load(task.control, stateSlot) === BatchState.started) Atomics.store(task.control, stateSlot, BatchState.finished);
    settle();
    this.pool.distribute();
  }

  /** The thread ends: every task on it fails, and the pool starts another in its place. */
  end(err: Error): void {
    if (!this.alive) return;
    this.alive = false;
    clearInterval(this.beating);
    for (const task of this.tasks) {
      task.done = true;
      task.reject(err);
    }
    this.tasks.clear();
    this.pool.replace(this);
  }

  terminate(): Promise<number> {
    setTimeout(() => this.end(new Error('Terminating worker thread')), 1);
    return Promise.resolve(1);
  }
}

/** Piscina as the dispatcher sees it, with six tasks a thread and a queue behind them. */
class ModelPool implements BatchPool {
  threads: ModelThread[] = [];
  readonly queue: ModelTask[] = [];
  readonly executions = new Map<string, number>();
  private nextThreadId = 1;
  private fateIndex = 0;
  private delayIndex = 0;

  constructor(
    count: number,
    private readonly fates: readonly Fate[],
    private readonly delays: readonly number[],
    private readonly avoid: ReadonlySet<number>,
  ) {
    for (let i = 0; i < count; i++) this.threads.push(new ModelThread(this.nextThreadId++, this));
  }

  /** The scenario's faults, one per batch begun, then answers only: a fault storm, then calm. */
  nextFate(): Fate {
    return this.fates[this.fateIndex++] ?? 'ok';
  }

  nextDelay(most: number): number {
    return (this.delays[this.delayIndex++ % this.delays.length] ?? 0) % (most + 1);
  }

  get queueSize(): number {
    return this.queue.length;
  }

  get utilization(): number {
    return 0;
  }

  run(task: BatchTask): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      this.queue.push({ task, control: new Int32Array(task.control), resolve, reject, thread: undefined, done: false });
      this.distribute();
    });
  }

  /** The gateway's balancer (gateway/dispatch/worker_pool.ts): least busy with room, silent threads last. */
  distribute(): void {
    while (this.queue.length > 0) {
      const open = this.threads.filter((thread) => thread.alive && thread.currentUsage < 6);
      const answering = open.filter((thread) => !this.avoid.has(thread.threadId));
      const pick = (answering.length > 0 ? answering : open).sort((a, b) => a.currentUsage - b.currentUsage)[0];
      if (pick === undefined) return;
      pick.accept(this.queue.shift() as ModelTask);
    }
  }

  private closed = false;

  replace(thread: ModelThread): void {
    if (this.closed) return;
    this.threads = this.threads.filter((other) => other !== thread);
    this.threads.push(new ModelThread(this.nextThreadId++, this));
    this.distribute();
  }

  async close(): Promise<void> {}

  async destroy(): Promise<void> {
    this.closed = true;
    for (const thread of this.threads) thread.end(new Error('destroyed'));
  }
}

/** A client connection as the dispatcher sees an Exchange: open until the client goes away. */
class ModelClient {
  open = true;
  facts: unknown;
  readonly answers: TokenTaskResult[] = [];
  constructor(readonly id: string) {}
  sendJson(status: number, body: string, extras?: { retryAfter?: number }, error?: ErrorCode): void {
    this.answers.push([status, body, extras?.retryAfter ?? null, error ?? null]);
  }
}

const grantOfLane = { fast: 'client_credentials', password: 'password', store: 'refresh_token' } as const;
const laneName = fc.constantFrom<keyof typeof grantOfLane>('fast', 'fast', 'store', 'password');

const scenario = fc.record({
  threads: fc.integer({ min: 1, max: 4 }),
  maxBatch: fc.integer({ min: 1, max: 64 }),
  batchesPerThread: fc.integer({ min: 1, max: 3 }),
  maxQueue: fc.integer({ min: 20, max: 5000 }),
  password: fc.record({
    concurrency: fc.integer({ min: 1, max: 8 }),
    maxQueue: fc.integer({ min: 0, max: 300 }),
    shedDelayMs: fc.constantFrom(0, 0, 15),
  }),
  bursts: fc.array(
    fc.record({
      size: fc.integer({ min: 1, max: 5000 }),
      lanes: fc.array(laneName, { minLength: 1, maxLength: 8 }),
      pauseMs: fc.integer({ min: 0, max: 40 }),
      // Every n-th client of the burst goes away after `goneAfterMs` (0: none does).
      goneEvery: fc.constantFrom(0, 0, 3, 7),
      goneAfterMs: fc.integer({ min: 0, max: 30 }),
    }),
    { minLength: 1, maxLength: 3 },
  ),
  fates: fc.array(fc.constantFrom<Fate>('ok', 'ok', 'late', 'short', 'throw', 'die', 'stall', 'stall'), { minLength: 1, maxLength: 20 }),
  delays: fc.array(fc.nat({ max: 1000 }), { minLength: 1, maxLength: 20 }),
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

t.test('every request is answered exactly once with its own answer, and every count returns to zero', async (t) => {
  let runs = 0;
  let slowest = 0;
  await fc.assert(
    fc.asyncProperty(scenario, async (s) => {
      runs++;
      const began = performance.now();
      const suspects = new Set<number>();
      const pool = new ModelPool(s.threads, s.fates, s.delays, suspects);
      const dispatcher = new WorkerDispatcher(pool, {
        threads: s.threads,
        maxQueue: s.maxQueue,
        maxBatch: s.maxBatch,
        batchesPerThread: s.batchesPerThread,
        passwordLane: s.password,
        stallTimeoutMs: 150,
        suspectAfterMs: 40,
        suspectThreads: suspects,
        logger: pino({ level: 'silent' }),
      });
      const clients: ModelClient[] = [];
      const items = new Map<string, TaskItem>();
      let total = 0;
      for (const [b, burst] of s.bursts.entries()) {
        const size = Math.min(burst.size, 5000 - total);
        for (let i = 0; i < size; i++) {
          const id = `${b}-${i}`;
          const lane = burst.lanes[i % burst.lanes.length] as keyof typeof grantOfLane;
          const item: TaskItem = { kind: 'token', grantType: grantOfLane[lane], clientId: 'c', params: { id } };
          const client = new ModelClient(id);
          clients.push(client);
          items.set(id, item);
          if (burst.goneEvery > 0 && i % burst.goneEvery === 0) {
            setTimeout(() => {
              client.open = false;
            }, burst.goneAfterMs);
          }
          dispatcher.submit(client as unknown as Exchange as Sink, item);
        }
        total += size;
        await sleep(burst.pauseMs);
      }

      // At most 20 faults, stalls of at most 300 ms, a stuck thread is terminated after 150 ms: all is answered well within this.
      const deadline = performance.now() + 15_000;
      while (clients.some((c) => c.open && c.answers.length === 0) && performance.now() < deadline) await sleep(20);
      await Promise.race([dispatcher.drain(), sleep(Math.max(0, deadline - performance.now()))]);
      // Held refusals are sent after their delay.
      await sleep(s.password.shedDelayMs + 5);

      for (const client of clients) {
        if (client.answers.length > 1) throw new Error(`${client.id} answered ${client.answers.length} times`);
        if (client.open && client.answers.length !== 1) throw new Error(`${client.id} (open) never answered`);
        const answer = client.answers[0];
        if (answer === undefined) continue;
        const [status, body, retryAfter] = answer;
        if (status === 200 && (JSON.parse(body) as { id: string }).id !== client.id) throw new Error(`${client.id} got ${body}`);
        if (status === 503 && retryAfter !== 1) throw new Error(`${client.id}: 503 without Retry-After`);
        if (![200, 500, 503].includes(status)) throw new Error(`${client.id}: status ${status}`);
      }
      for (const [id, count] of pool.executions) {
        const item = items.get(id) as TaskItem;
        if (count > 1 && !mayRunAgainAfterStart(item)) throw new Error(`${id} (${laneOf(item)}) started ${count} times`);
        if (count > 2) throw new Error(`${id} started ${count} times`);
      }
      const counters = dispatcher.counters();
      if (Object.values(counters).some((n) => n !== 0)) throw new Error(`counts left: ${JSON.stringify(counters)}`);
      await pool.destroy();
      slowest = Math.max(slowest, performance.now() - began);
    }),
    { numRuns: 20, interruptAfterTimeLimit: 90_000 },
  );
  t.ok(runs >= 10, `${runs} random scenarios, the slowest ${Math.round(slowest)} ms`);
});
