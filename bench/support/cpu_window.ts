import os from 'node:os';
import { processCpuSeconds, systemTicks, type SystemTicks } from './proc_stats.js';

/** CPU used by one process over a window, as a rate: `cores` = CPU seconds per wall second. */
export interface CpuFigure {
  cores: number;
  cpuSeconds: number;
  seconds: number;
}

interface Sample {
  at: number;
  cpu: number;
}

/**
 * Samples the CPU time of named processes at the same instants. Each process's figure is the rate
 * between its first and last successful sample, so a load generator that exits before the final
 * sample is still measured over the time it ran (minus at most one sampling interval).
 */
export class CpuWindow {
  private readonly first = new Map<string, Sample>();
  private readonly last = new Map<string, Sample>();
  private firstSystem: SystemTicks | null = null;
  private lastSystem: SystemTicks | null = null;

  /** Each name is one process, or several counted as one (a gateway of several processes). */
  constructor(private readonly pids: ReadonlyMap<string, number | readonly number[]>) {}

  sample(): void {
    const at = performance.now();
    for (const [name, pids] of this.pids) {
      const cpu = cpuSecondsOf(pids);
      if (cpu === null) continue;
      if (!this.first.has(name)) this.first.set(name, { at, cpu });
      this.last.set(name, { at, cpu });
    }
    const system = systemTicks();
    if (system !== null) {
      this.firstSystem ??= system;
      this.lastSystem = system;
    }
  }

  figure(name: string): CpuFigure | null {
    const first = this.first.get(name);
    const last = this.last.get(name);
    if (first === undefined || last === undefined) return null;
    const seconds = (last.at - first.at) / 1000;
    if (seconds <= 0) return null;
    const cpuSeconds = last.cpu - first.cpu;
    return { cores: cpuSeconds / seconds, cpuSeconds, seconds };
  }

  /** Cores the whole machine kept busy over the window (all processes). */
  machineBusyCores(): number | null {
    if (this.firstSystem === null || this.lastSystem === null) return null;
    const total = this.lastSystem.total - this.firstSystem.total;
    return total > 0 ? ((this.lastSystem.busy - this.firstSystem.busy) / total) * os.cpus().length : null;
  }

  /**
   * Cores used by processes outside the measurement (other people's test runs on a shared VM):
   * machine busy time minus every named process.
   */
  otherCores(): number | null {
    const busy = this.machineBusyCores();
    if (busy === null) return null;
    let ours = 0;
    for (const name of this.pids.keys()) ours += this.figure(name)?.cores ?? 0;
    return Math.max(0, busy - ours);
  }

  /** Share of all CPU time in the window that the hypervisor gave to someone else. */
  stealFraction(): number | null {
    if (this.firstSystem === null || this.lastSystem === null) return null;
    const total = this.lastSystem.total - this.firstSystem.total;
    return total > 0 ? (this.lastSystem.steal - this.firstSystem.steal) / total : null;
  }
}

/** The CPU time of one process, or the sum of several; null when any of them cannot be read. */
function cpuSecondsOf(pids: number | readonly number[]): number | null {
  let total = 0;
  for (const pid of typeof pids === 'number' ? [pids] : pids) {
    const cpu = processCpuSeconds(pid);
    if (cpu === null) return null;
    total += cpu;
  }
  return total;
}
