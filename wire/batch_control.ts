/**
 * How the gateway sees a batch's progress inside a worker thread, even when that thread cannot
 * answer: a small shared memory block per batch (docs/operations.md, "Worker faults").
 *
 * A validator that loops on the CPU, or otherwise blocks its thread, stops every timer of that
 * thread, so the thread cannot report that it is stuck. What the gateway can see is that the
 * thread's heartbeat stopped: the worker bumps {@link heartbeatSlot} of every batch it runs on a
 * short interval, and the gateway terminates a thread whose heartbeat has not moved for the time
 * limit. {@link stateSlot} tells the gateway, when a thread dies, whether a batch never started
 * (safe to run on another thread), started and did not finish (its requests may have done
 * anything), or finished (the task itself failed).
 */

/** The message of one batch: the packed requests (transferred) and its control block (shared). */
export interface BatchTask {
  readonly batch: Uint8Array;
  readonly control: SharedArrayBuffer;
}

/** Int32 slot the worker increments while its event loop turns. */
export const heartbeatSlot = 0;
/** Int32 slot holding a {@link BatchState}. */
export const stateSlot = 1;
/**
 * Int32 slot holding the `threadId` of the worker that runs the batch, so the gateway can
 * terminate that thread (Piscina's abort signal would make every batch exclusive to its thread).
 */
export const threadSlot = 2;

export const BatchState = {
  /** Sent, not yet picked up by the worker's event loop. */
  queued: 0,
  /** The worker began handling its requests. */
  started: 1,
  /** The worker's task function returned or threw. */
  finished: 2,
  /**
   * The gateway took the batch back before a worker began it (its thread stopped answering) and
   * sent its requests elsewhere: the worker that finds it later skips it.
   */
  withdrawn: 3,
} as const;
export type BatchState = (typeof BatchState)[keyof typeof BatchState];

/** How often a worker's heartbeat moves while it runs batches. */
export const heartbeatIntervalMs = 50;

export function newBatchControl(): SharedArrayBuffer {
  return new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT);
}

/**
 * The worker's side of the hand-over: it takes the batch unless the gateway withdrew it first.
 * One compare-and-swap decides, so each batch runs on a worker or is sent again, never both.
 */
export function claimBatch(control: Int32Array, thread: number): boolean {
  Atomics.store(control, threadSlot, thread);
  return Atomics.compareExchange(control, stateSlot, BatchState.queued, BatchState.started) === BatchState.queued;
}

/** The gateway's side: true when no worker began the batch, and none will. */
export function withdrawBatch(control: Int32Array): boolean {
  return Atomics.compareExchange(control, stateSlot, BatchState.queued, BatchState.withdrawn) === BatchState.queued;
}

export function isBatchTask(task: unknown): task is BatchTask {
  return typeof task === 'object' && task !== null && (task as BatchTask).control instanceof SharedArrayBuffer;
}
