import { BatchState, heartbeatIntervalMs, heartbeatSlot, stateSlot } from '../../wire/batch_control.js';

/**
 * The control blocks of the batches this thread runs now; their heartbeats move together, and
 * stop together when something blocks the thread (wire/batch_control.ts). The
 * gateway's watchdog terminates a thread whose heartbeat stopped (docs/operations.md, "Worker faults").
 */
export class BatchHeartbeat {
  private readonly running = new Set<Int32Array>();
  private timer: NodeJS.Timeout | undefined;

  private readonly beat = (): void => {
    for (const control of this.running) Atomics.add(control, heartbeatSlot, 1);
  };

  /** A batch this thread claimed: its heartbeat moves until {@link untrack}. */
  track(control: Int32Array): void {
    this.running.add(control);
    this.timer ??= setInterval(this.beat, heartbeatIntervalMs);
  }

  /** The batch is answered: marked finished; the timer stops with the last batch. */
  untrack(control: Int32Array): void {
    this.running.delete(control);
    Atomics.store(control, stateSlot, BatchState.finished);
    if (this.running.size === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}
