/**
 * Summarises the `--cpu-prof` files of a run (`npm run bench -- … --cpu-prof`): per thread, the
 * functions with the most self time within the measured windows. Thread 0 is the main thread (the
 * gateway's uWS thread); thread 1 is Node's module-loader hooks thread (the servers run with
 * `--import tsx`), idle once loaded; the gateway's Piscina workers come after it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** A span on the monotonic clock profiles are stamped with (`process.hrtime`, in µs). */
export interface TimeWindow {
  startUs: number;
  endUs: number;
}

export interface HotFunction {
  name: string;
  selfMs: number;
  percent: number;
}

export interface ThreadProfile {
  file: string;
  thread: number;
  totalMs: number;
  top: HotFunction[];
}

function frameName(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const name = functionName === '' ? '(anonymous)' : functionName;
  if (url === '') return name;
  const short = url
    .replace(/^file:\/\//, '')
    .replace(/^.*\/node_modules\//, '')
    .replace(/^.*\/(gateway|workers|bench)\//, '$1/');
  return `${name} ${short}:${lineNumber + 1}`;
}

/** Self time per function; only samples inside `windows` when given. */
export function summariseProfile(file: string, topN = 12, windows?: readonly TimeWindow[]): ThreadProfile {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<string, number>();
  let totalUs = 0;
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    const delta = profile.timeDeltas[i + 1] ?? 0;
    if (windows !== undefined && !windows.some((w) => at >= w.startUs && at <= w.endUs)) return;
    const node = byId.get(id);
    if (node === undefined) return;
    const name = frameName(node);
    selfUs.set(name, (selfUs.get(name) ?? 0) + delta);
    totalUs += delta;
  });
  const top = [...selfUs.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, topN)
    .map(([name, us]) => ({ name, selfMs: us / 1000, percent: totalUs > 0 ? (us / totalUs) * 100 : 0 }));
  // Node names profiles CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile
  const thread = Number(path.basename(file).split('.')[4] ?? Number.NaN);
  return { file, thread, totalMs: totalUs / 1000, top };
}

/** Every profile under `dir`; `windows` maps a contender's folder to its measured windows. */
export function summariseProfiles(dir: string, topN = 12, windows?: ReadonlyMap<string, readonly TimeWindow[]>): ThreadProfile[] {
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.cpuprofile'));
  return files
    .map((f) => summariseProfile(path.join(dir, f), topN, windows?.get(path.dirname(f))))
    .sort((a, b) => a.file.localeCompare(b.file));
}

export function formatProfiles(profiles: readonly ThreadProfile[]): string {
  const lines: string[] = [];
  for (const p of profiles) {
    lines.push(
      `${path.relative(path.dirname(path.dirname(p.file)), p.file)} (${p.thread === 0 ? 'main thread' : `worker thread ${p.thread}`}, ${Math.round(p.totalMs)} ms sampled)`,
    );
    for (const f of p.top) lines.push(`  ${f.percent.toFixed(1).padStart(5)}%  ${f.name}`);
  }
  return lines.join('\n');
}

if (process.argv[1]?.endsWith('cpu_profile.ts') === true) {
  const dir = process.argv[2];
  if (dir === undefined) {
    console.error('usage: cpu_profile.ts <dir with .cpuprofile files> [top]');
    process.exit(2);
  }
  console.log(formatProfiles(summariseProfiles(dir, Number(process.argv[3] ?? 12))));
}
