/**
 * CPU time per thread of a process, from Linux /proc/<pid>/task: the main thread (the gateway's
 * uWS event loop, whose tid is the pid) apart from every other thread (the Piscina workers, and
 * V8's and libuv's helpers). The split says which side of the thread boundary a cost is on
 * (bench/README.md, "The columns": by thread); `--cpu-prof` then says what it is.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { clockTicks, procAvailable, statTicks } from './proc_stats.js';

/** CPU seconds used so far by a process's main thread and by all its other threads. */
export interface ThreadSplit {
  main: number;
  others: number;
}

/** Adds up per-thread ticks into the main thread's and the others', in seconds. */
export function splitTicks(pid: number, threads: ReadonlyMap<number, number>, ticksPerSecond: number): ThreadSplit {
  let main = 0;
  let others = 0;
  for (const [tid, ticks] of threads) {
    if (tid === pid) main += ticks;
    else others += ticks;
  }
  return { main: main / ticksPerSecond, others: others / ticksPerSecond };
}

/**
 * The split of a live process, or null (no /proc, or the process is gone). A thread that ends
 * between the listing and its read is left out: its time is then missing from `others`, which a
 * gateway's long-lived threads never do during a measured run.
 */
export function threadCpuSeconds(pid: number): ThreadSplit | null {
  if (!procAvailable) return null;
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return null;
  }
  const threads = new Map<number, number>();
  for (const tid of tids) {
    try {
      const ticks = statTicks(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'latin1'));
      if (ticks !== null) threads.set(Number(tid), ticks);
    } catch {
      // The thread ended.
    }
  }
  return threads.has(pid) ? splitTicks(pid, threads, clockTicks()) : null;
}
