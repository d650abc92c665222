/**
 * The bare batch hand-off's worker task (support/handoff_cost.ts): what the gateway's worker does
 * with a batch (workers/worker.ts) minus the requests' own work. It claims the batch on its
 * control block, unpacks the items, answers each with nothing, and moves the packed answers back.
 */
import { threadId } from 'node:worker_threads';
import { move } from 'piscina';
import { claimBatch, type BatchTask } from '../../../wire/batch_control.js';
import { packMessage, unpackTaskItems } from '../../../wire/token_task.js';

export default function emptyBatch(task: BatchTask): unknown {
  if (!claimBatch(new Int32Array(task.control), threadId)) return move(packMessage([]));
  const items = unpackTaskItems(task.batch);
  return move(packMessage(items.map(() => null)));
}
