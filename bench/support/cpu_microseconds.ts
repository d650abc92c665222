/** The clocks a measurement reads; the process's own unless a test gives fakes. */
export interface MeasureClocks {
  /** Wall time, ms. */
  now: () => number;
  /** CPU time of the process so far, µs. */
  cpu: () => number;
}

const processClocks: MeasureClocks = {
  now: () => performance.now(),
  cpu: () => {
    const { user, system } = process.cpuUsage();
    return user + system;
  },
};

/**
 * CPU µs of one call of `work`, after a short warm-up: the least of `windows` windows of about
 * `ms / windows` milliseconds each. A floor is what the work cannot go below, and a window only
 * ever reads high: the process's CPU clock also counts V8's compiler and collector threads, busy
 * when the work has just become hot, and the VM's other tenants slow a window down. One 500 ms
 * window read a full JWT at 50 µs in one run and 36 µs in another, on the same VM with the same
 * code (bench/README.md, "Floors").
 */
export function cpuMicroseconds(work: () => void, ms = 500, windows = 5, clocks: MeasureClocks = processClocks): number {
  for (let i = 0; i < 200; i++) work();
  let least = Number.POSITIVE_INFINITY;
  for (let w = 0; w < windows; w++) {
    const cpuAt = clocks.cpu();
    const until = clocks.now() + ms / windows;
    let calls = 0;
    while (clocks.now() < until) {
      for (let i = 0; i < 32; i++) work();
      calls += 32;
    }
    least = Math.min(least, (clocks.cpu() - cpuAt) / calls);
  }
  return least;
}
