/**
 * CPU and memory of other processes, read from Linux /proc. Every figure covers all threads of a
 * process (the gateway's Piscina workers included). Elsewhere the readers return null and the
 * report leaves those columns empty.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

export const procAvailable = existsSync('/proc/self/stat');

let ticksPerSecond: number | undefined;

export function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** User + system CPU seconds a live process has used so far; null once it is gone or a zombie. */
export function processCpuSeconds(pid: number): number | null {
  if (!procAvailable) return null;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return null;
  }
  const fields = statFields(stat);
  if (fields[0] === 'Z' || fields[0] === 'X') return null;
  const ticks = statTicks(stat);
  return ticks === null ? null : ticks / clockTicks();
}

/** The fields of a /proc stat line after the command name, from `state` on. */
function statFields(stat: string): string[] {
  // proc(5): the command name may hold spaces and parentheses, so fields count from the last ')'.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** utime + stime of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat line, in clock ticks; null when it does not parse. */
export function statTicks(stat: string): number | null {
  const fields = statFields(stat);
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return Number.isFinite(utime) && Number.isFinite(stime) ? utime + stime : null;
}

export interface ProcessMemory {
  rssBytes: number;
  /** High-water mark of the resident set since the process started (VmHWM). */
  peakRssBytes: number;
}

export function processMemory(pid: number): ProcessMemory | null {
  if (!procAvailable) return null;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'latin1');
    const kib = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024;
    const rssBytes = kib('VmRSS');
    const peakRssBytes = kib('VmHWM');
    return Number.isFinite(rssBytes) ? { rssBytes, peakRssBytes: Number.isFinite(peakRssBytes) ? peakRssBytes : rssBytes } : null;
  } catch {
    return null;
  }
}

export interface SystemTicks {
  total: number;
  /** Time some process ran (user, nice, system, irq, softirq). */
  busy: number;
  steal: number;
}

/** The machine-wide `cpu` line of /proc/stat: all time, busy time, and the time the hypervisor stole. */
export function systemTicks(): SystemTicks | null {
  if (!procAvailable) return null;
  try {
    const line = readFileSync('/proc/stat', 'latin1').split('\n', 1)[0] ?? '';
    // user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is already in user.
    const values = line.trim().split(/\s+/).slice(1, 9).map(Number);
    const total = values.reduce((sum, v) => sum + v, 0);
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = values;
    return { total, busy: user + nice + system + irq + softirq, steal };
  } catch {
    return null;
  }
}
