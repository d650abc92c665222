import { spawn, spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KindCount, LoadGenerator, LoadOptions, LoadResult, LoadRun } from './load_generator.js';

const checkScript = fileURLToPath(new URL('./check.lua', import.meta.url));

interface WrkJson {
  requests: number;
  duration_us: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latency_us: { p50: number; p90: number; p99: number; max: number; mean: number };
  non2xx: number;
  unexpected: number;
  kinds: KindCount[];
  exhausted: string | null;
}

let specSequence = 0;

/** The request spec check.lua reads (its header describes the format). */
function writeSpec(options: LoadOptions): string {
  const lines: string[] = [];
  const clean = (text: string, what: string): string => {
    if (/[\t\r\n]/.test(text)) throw new Error(`${what} must not contain tabs or line breaks: ${JSON.stringify(text.slice(0, 80))}`);
    return text;
  };
  for (const kind of options.kinds) {
    const { request, expect } = kind;
    if (!/^\w+$/.test(kind.name)) throw new Error(`kind name "${kind.name}" must be letters, digits and _`);
    lines.push(['kind', kind.name, String(kind.weight), request.method, clean(request.path, 'path')].join('\t'));
    for (const [name, value] of Object.entries(request.headers))
      lines.push(['header', clean(name, 'header'), clean(value, 'header')].join('\t'));
    if (request.body !== undefined) lines.push(['body', clean(request.body, 'body')].join('\t'));
    lines.push(['expect', String(expect.status), clean(expect.bodyPrefix, 'prefix')].join('\t'));
    for (const text of expect.contains ?? []) lines.push(['contains', clean(text, 'contains')].join('\t'));
    for (const text of expect.lacks ?? []) lines.push(['lacks', clean(text, 'lacks')].join('\t'));
    if (kind.feed !== undefined)
      lines.push(
        [
          'feed',
          kind.feed.mode,
          clean(kind.feed.file, 'feed file'),
          String(kind.feed.start),
          String(kind.feed.count),
          ...(kind.feed.header === undefined ? [] : [clean(kind.feed.header, 'feed header')]),
        ].join('\t'),
      );
  }
  const file = path.join(options.workDir, `wrk-spec-${process.pid}-${++specSequence}.tsv`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

/** The installed wrk's version line, or null when there is no wrk on the PATH. */
export function findWrk(): string | null {
  const probe = spawnSync('wrk', ['-v'], { encoding: 'utf8' });
  if (probe.error !== undefined) return null;
  // `wrk -v` prints "wrk 4.2.0 [epoll] Copyright …" and exits 1.
  const line = `${probe.stdout}${probe.stderr}`.split('\n')[0] ?? '';
  return /^wrk\s+(\S+)/.exec(line)?.[1] ?? 'unknown';
}

/** wrk with bench/load/check.lua: every response is checked in Lua, results come back as JSON. */
export function createWrk(version: string, threads: number): LoadGenerator {
  return {
    name: 'wrk',
    version,
    threads,
    start(options: LoadOptions): LoadRun {
      if (options.kinds.length === 0) throw new Error('a run needs at least one kind of request');
      const spec = writeSpec(options);
      const wrkThreads = Math.min(threads, options.connections);
      // In a mix every request names its own path; the URL only tells wrk where to connect.
      const first = options.kinds[0] as LoadOptions['kinds'][number];
      const args = [
        `-t${wrkThreads}`,
        `-c${options.connections}`,
        `-d${options.durationS}s`,
        // A token request unanswered for 2 s under this load is a failure, and a server that hangs
        // must show up as timeouts rather than as a quiet low req/s.
        '--timeout',
        '2s',
        '-s',
        checkScript,
        options.baseUrl + first.request.path,
      ];
      const child = spawn('wrk', args, {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, BENCH_SPEC: spec, BENCH_THREADS: String(wrkThreads) },
      });
      let stdout = '';
      let stderr = '';
      child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const started = new Promise<void>((resolve, reject) => {
        child.once('spawn', () => resolve());
        child.once('error', reject);
      });
      const done = new Promise<LoadResult>((resolve, reject) => {
        child.once('error', reject);
        child.once('close', (code) => {
          rmSync(spec, { force: true });
          const json = /^BENCH_RESULT (.*)$/m.exec(stdout)?.[1];
          if (code !== 0 || json === undefined) {
            reject(new Error(`wrk failed (exit ${code}): ${stderr.trim() || stdout.trim()}`));
            return;
          }
          const raw = JSON.parse(json) as WrkJson;
          const sample = /^BENCH_SAMPLE (.*)$/m.exec(stdout)?.[1]?.trim() ?? '';
          const durationS = raw.duration_us / 1e6;
          resolve({
            requests: raw.requests,
            durationS,
            rps: durationS > 0 ? raw.requests / durationS : 0,
            latencyMs: {
              p50: raw.latency_us.p50 / 1000,
              p90: raw.latency_us.p90 / 1000,
              p99: raw.latency_us.p99 / 1000,
              max: raw.latency_us.max / 1000,
              mean: raw.latency_us.mean / 1000,
            },
            non2xx: raw.non2xx,
            unexpected: raw.unexpected,
            errors: { connect: raw.errors.connect, read: raw.errors.read, write: raw.errors.write, timeout: raw.errors.timeout },
            badSample: sample === '' ? null : sample,
            kinds: raw.kinds,
            exhausted: raw.exhausted,
          });
        });
      });
      return { pid: child.pid as number, started, done };
    },
  };
}
