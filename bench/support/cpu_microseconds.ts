/** CPU µs of one call of `work`, on this thread, over about `ms` milliseconds after a short warm-up. */
export function cpuMicroseconds(work: () => void, ms = 500): number {
  for (let i = 0; i < 200; i++) work();
  const cpuAt = process.cpuUsage();
  const until = performance.now() + ms;
  let calls = 0;
  while (performance.now() < until) {
    for (let i = 0; i < 32; i++) work();
    calls += 32;
  }
  const cpu = process.cpuUsage(cpuAt);
  return (cpu.user + cpu.system) / calls;
}
