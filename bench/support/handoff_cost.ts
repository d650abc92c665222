/**
 * What one request pays for crossing to a worker thread and back when it does nothing there: the
 * floor's bare batch hand-off (issue 33, scenarios/floor.ts). The workers sign (the design card),
 * so every request of the fixed design crosses two threads; this measures that crossing alone.
 *
 * A Piscina pool set up as the gateway's (gateway/dispatch/worker_pool.ts: the run's worker
 * threads, `tasksPerThread` tasks a thread, asynchronous, the same load balancer, no timing
 * records) runs empty tasks of the batch size the gateway reported for the round
 * (`tessera_worker_batch_size`): the items packed as the dispatcher packs them
 * (`packTaskItems`, the batch moved, a control block), each answered with nothing
 * (threads/handoff_task.ts), with as many batches out as one lane of the dispatcher keeps
 * (`batchesPerThread` per thread). CPU of the whole bench process (every thread) per task, over
 * the batch size: µs per request.
 */
import { Piscina } from 'piscina';
import { leastBusyBalancer, tasksPerThread } from '../../gateway/dispatch/worker_pool.js';
import { newBatchControl, type BatchTask } from '../../wire/batch_control.js';
import { packTaskItems, unpackMessage, type TaskItem } from '../../wire/token_task.js';
import type { HandoffCost } from '../report/results.js';

const workerFile = new URL('./threads/handoff_worker.mjs', import.meta.url);
/** Batches a lane keeps out per thread (gateway/dispatch/worker_dispatcher.ts, `batchesPerThread`). */
const batchesPerThread = 2;

const pools = new Map<number, Piscina>();

function poolOf(threads: number): Piscina {
  let pool = pools.get(threads);
  if (pool === undefined) {
    pool = new Piscina({
      filename: workerFile.href,
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: Number.POSITIVE_INFINITY,
      atomics: 'disabled',
      concurrentTasksPerWorker: tasksPerThread,
      loadBalancer: leastBusyBalancer(new Set()),
      recordTiming: false,
    });
    pools.set(threads, pool);
  }
  return pool;
}

/** Ends the pools the run started (RunContext.close). */
export async function closeHandoffPools(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  await Promise.all(all.map((pool) => pool.destroy().catch(() => {})));
}

/** An item that asks for nothing: `unpackTaskItems` needs its `params`. */
const emptyItem = { params: {} } as unknown as TaskItem;

async function runTasks(pool: Piscina, batch: number, inFlight: number, untilMs: number): Promise<number> {
  const items = Array.from({ length: batch }, () => emptyItem);
  let tasks = 0;
  const lane = async (): Promise<void> => {
    while (performance.now() < untilMs) {
      const task: BatchTask = { batch: packTaskItems(items), control: newBatchControl() };
      const answer = (await pool.run(task, { transferList: [task.batch.buffer as ArrayBuffer] })) as Uint8Array;
      unpackMessage<unknown[]>(answer);
      tasks++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return tasks;
}

/**
 * The bare hand-off of a batch of `batch` requests (rounded to a whole one, at least one) through
 * a pool of `threads`, for about `seconds` after a short warm-up.
 */
export async function measureHandoff(threads: number, batch: number, options: { seconds?: number } = {}): Promise<HandoffCost> {
  const size = Math.max(1, Math.round(batch));
  const pool = poolOf(threads);
  const inFlight = threads * batchesPerThread;
  await runTasks(pool, size, inFlight, performance.now() + 200);
  const cpuAt = process.cpuUsage();
  const tasks = await runTasks(pool, size, inFlight, performance.now() + (options.seconds ?? 1) * 1000);
  const cpu = process.cpuUsage(cpuAt);
  const usPerTask = (cpu.user + cpu.system) / Math.max(1, tasks);
  return { batch, size, tasks, usPerTask, usPerRequest: usPerTask / size };
}
