/**
 * The floors' CPU figure per call (bench/support/cpu_microseconds.ts): the least window, on fake
 * clocks where each call costs what the test says.
 */
import t from 'tap';
import { cpuMicroseconds, type MeasureClocks } from '../support/cpu_microseconds.js';

/** A process whose every call of the work takes `costOf(call)` µs of CPU and as much wall time. */
function fakeProcess(costOf: (call: number) => number): { clocks: MeasureClocks; work: () => void; calls: () => number } {
  let cpu = 0;
  let calls = 0;
  return {
    clocks: { now: () => cpu / 1000, cpu: () => cpu },
    work: () => {
      cpu += costOf(calls);
      calls++;
    },
    calls: () => calls,
  };
}

t.test('a steady cost is read as it is', async (t) => {
  const steady = fakeProcess(() => 30);
  t.equal(cpuMicroseconds(steady.work, 100, 5, steady.clocks), 30);
});

t.test('a window slowed down (the JIT compiling, a neighbour) does not raise the figure: the least window counts', async (t) => {
  // The first 240 ms after the warm-up cost 60 µs a call, the rest 36.
  const disturbed = fakeProcess((call) => (call >= 200 && call < 4200 ? 60 : 36));
  t.equal(cpuMicroseconds(disturbed.work, 500, 5, disturbed.clocks), 36);
  const oneWindow = fakeProcess((call) => (call >= 200 && call < 4200 ? 60 : 36));
  t.ok(cpuMicroseconds(oneWindow.work, 500, 1, oneWindow.clocks) > 40, 'one window of 500 ms averages the disturbance in');
});

t.test('the warm-up is not measured, and the windows last about the time given', async (t) => {
  // Warm-up calls cost 1000 µs each: counted, they would dominate every window.
  const cold = fakeProcess((call) => (call < 200 ? 1000 : 10));
  t.equal(cpuMicroseconds(cold.work, 50, 5, cold.clocks), 10);
  // 50 ms of 10 µs calls after the warm-up: about 5000 calls, rounded up to whole groups of 32.
  t.ok(cold.calls() - 200 >= 5000 && cold.calls() - 200 <= 5000 + 5 * 32, `${cold.calls() - 200} calls measured`);
});
