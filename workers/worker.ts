/**
 * Piscina worker entry: validates grants and signs tokens for batches of token requests.
 * Everything that does not change per request is built once, at thread start (thread/boot.ts);
 * each request goes to its endpoint (thread/dispatch.ts); each batch this thread runs has a
 * heartbeat the gateway watches (thread/heartbeat.ts).
 */
import { threadId } from 'node:worker_threads';
import { move, workerData } from 'piscina';
import { claimBatch, isBatchTask, type BatchTask } from '../wire/batch_control.js';
import { packMessage, unpackTaskItems, type TaskItem } from '../wire/token_task.js';
import type { WorkerBootData } from '../wire/worker_boot.js';
import { bootWorker } from './thread/boot.js';
import { answerItem } from './thread/dispatch.js';
import { BatchHeartbeat } from './thread/heartbeat.js';

const worker = await bootWorker(workerData as WorkerBootData);
const heartbeat = new BatchHeartbeat();
const answer = (item: TaskItem) => answerItem(worker, item);

/**
 * One Piscina task: a packed batch of token requests in, a packed batch of answers out. The
 * gateway's batches carry a control block; the boot check's empty batch comes bare.
 */
export default async function runTokenBatch(task: BatchTask | Uint8Array): Promise<unknown> {
  worker.keyRing.refresh(Date.now());
  worker.storedResources.refresh();
  if (!isBatchTask(task)) return move(packMessage(await Promise.all(unpackTaskItems(task).map(answer))));
  const control = new Int32Array(task.control);
  // Withdrawn while this thread was busy: the gateway sent its requests to another thread.
  if (!claimBatch(control, threadId)) return move(packMessage([]));
  heartbeat.track(control);
  try {
    const items = unpackTaskItems(task.batch);
    const results = await Promise.all(items.map(answer));
    return move(packMessage(results));
  } finally {
    heartbeat.untrack(control);
  }
}
