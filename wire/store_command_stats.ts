/**
 * Latency and failures of store commands, counted by every thread that calls the store (the
 * workers and the gateway thread) into one shared block of memory that the gateway reads when
 * `/metrics` is scraped (`tessera_store_command_duration_seconds`, docs/operations.md
 * "Metrics"). Shared memory rather than messages: counting costs a few atomic adds per command
 * and nothing crosses the thread boundary per request.
 */

/** The store operations counted, as the Redis store names them. */
export const storeCommands = [
  'get',
  'set',
  'delete',
  'consume',
  'rotate',
  'increment',
  'resetCounter',
  'putIfAbsent',
  'revokeFamily',
  'isFamilyRevoked',
  'familyRecords',
  'writeWhileLive',
  'checkReady',
  'ping',
] as const;

/** Upper bounds of the latency buckets, in seconds (the last bucket, +Inf, is implied). */
export const storeLatencyBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1] as const;

// Per command: one count per bucket and +Inf, then errors; and a sum of microseconds.
const countsPerCommand = storeLatencyBuckets.length + 2;
const errorsSlot = storeLatencyBuckets.length + 1;

/** What one command's figures are at a scrape. */
export interface StoreCommandFigures {
  readonly command: string;
  /** Calls per bucket, not cumulative; the last is +Inf. */
  readonly buckets: readonly number[];
  readonly count: number;
  readonly sumSeconds: number;
  readonly errors: number;
}

/** The shared memory of {@link StoreCommandStats}; made once by the gateway and given to every worker. */
export function newStoreCommandBuffers(): { counts: SharedArrayBuffer; sums: SharedArrayBuffer } {
  return {
    counts: new SharedArrayBuffer(storeCommands.length * countsPerCommand * Int32Array.BYTES_PER_ELEMENT),
    sums: new SharedArrayBuffer(storeCommands.length * BigInt64Array.BYTES_PER_ELEMENT),
  };
}

export class StoreCommandStats {
  private readonly counts: Int32Array;
  private readonly sums: BigInt64Array;
  private readonly index = new Map<string, number>(storeCommands.map((command, i) => [command, i]));

  constructor(buffers: { counts: SharedArrayBuffer; sums: SharedArrayBuffer }) {
    this.counts = new Int32Array(buffers.counts);
    this.sums = new BigInt64Array(buffers.sums);
  }

  /** One command that took `seconds`, and whether it failed. */
  readonly record = (command: string, seconds: number, failed: boolean): void => {
    const i = this.index.get(command);
    if (i === undefined) return;
    const base = i * countsPerCommand;
    let bucket = 0;
    while (bucket < storeLatencyBuckets.length && seconds > (storeLatencyBuckets[bucket] as number)) bucket++;
    Atomics.add(this.counts, base + bucket, 1);
    if (failed) Atomics.add(this.counts, base + errorsSlot, 1);
    Atomics.add(this.sums, i, BigInt(Math.round(seconds * 1e6)));
  };

  /** The figures of every command called at least once. */
  read(): StoreCommandFigures[] {
    const figures: StoreCommandFigures[] = [];
    storeCommands.forEach((command, i) => {
      const base = i * countsPerCommand;
      const buckets: number[] = [];
      for (let b = 0; b <= storeLatencyBuckets.length; b++) buckets.push(Atomics.load(this.counts, base + b));
      const count = buckets.reduce((a, b) => a + b, 0);
      if (count === 0) return;
      figures.push({
        command,
        buckets,
        count,
        sumSeconds: Number(Atomics.load(this.sums, i)) / 1e6,
        errors: Atomics.load(this.counts, base + errorsSlot),
      });
    });
    return figures;
  }
}
