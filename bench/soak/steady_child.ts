/**
 * The soak's steady load, in a process of its own (so that neither the bursts nor the runner's
 * event loop delay its clock): `connections` keep-alive connections, each with one request
 * outstanding at a time, the kind picked per request by weight as in the `mixed` scenario, paced
 * to `rate` requests per second in all (a connection sends no sooner than its share of the rate
 * allows, and no later than its previous answer lets it).
 *
 * Unlike wrk and autocannon, it stops sending at the end and waits for every outstanding answer
 * (up to `deadlineMs` each): the soak's promise is that every request sent is answered, so
 * nothing may be left uncounted in flight. Each answer's completion time and latency go to
 * `samplesFile` (Float64 pairs: epoch ms, ms), which the runner splits into phases.
 *
 * Input: the path of a JSON {@link SteadyOptions} in argv[2]. Output: IPC `{ type: 'started' }`,
 * then `{ type: 'result', result: SteadyResult }`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import type { Expectation, LoadRequest } from '../load/load_generator.js';
import { answerSample, classify, emptyCount, type TrafficCount } from './classify.js';
import { requestBytes, takeAnswer } from './http_answer.js';

export interface SteadyKind {
  name: string;
  weight: number;
  request: LoadRequest;
  expect: Expectation;
  /** One body per line, each used once; null: the request's own body, replayed. */
  feedFile: string | null;
}

export interface SteadyOptions {
  port: number;
  connections: number;
  /** Requests per second in all. */
  rate: number;
  durationS: number;
  /** Longest wait for one answer before it counts as unanswered. */
  deadlineMs: number;
  kinds: SteadyKind[];
  samplesFile: string;
}

export interface SteadyResult {
  counts: TrafficCount[];
  /** The kind whose feed ran out (its connections stopped sending), or null. */
  exhausted: string | null;
  /** Epoch ms of the first send and of the last answer. */
  startedAtMs: number;
  endedAtMs: number;
  /** Samples written to the samples file. */
  samples: number;
  /** Answers that came when their connection had no request outstanding (a request answered twice). */
  strayAnswers: number;
}

const options = JSON.parse(readFileSync(process.argv[2] ?? '', 'utf8')) as SteadyOptions;
const kinds = options.kinds.map((kind) => ({
  ...kind,
  lines:
    kind.feedFile === null
      ? null
      : readFileSync(kind.feedFile, 'utf8')
          .split('\n')
          .filter((line) => line.length > 0),
  next: 0,
  count: emptyCount(kind.name),
}));
const totalWeight = kinds.reduce((sum, kind) => sum + kind.weight, 0);
let exhausted: string | null = null;
/** Answers that came when no request was outstanding on their connection. */
let strayAnswers = 0;

function pick(): (typeof kinds)[number] {
  let r = Math.random() * totalWeight;
  for (const kind of kinds) {
    r -= kind.weight;
    if (r < 0) return kind;
  }
  return kinds[kinds.length - 1] as (typeof kinds)[number];
}

// Samples: completion (epoch ms) and latency (ms), grown by doubling.
let samples = new Float64Array(1 << 16);
let sampleCount = 0;
function record(endMs: number, latencyMs: number): void {
  if (2 * sampleCount + 2 > samples.length) {
    const bigger = new Float64Array(samples.length * 2);
    bigger.set(samples);
    samples = bigger;
  }
  samples[2 * sampleCount] = endMs;
  samples[2 * sampleCount + 1] = latencyMs;
  sampleCount++;
}

const epochMs = (): number => performance.timeOrigin + performance.now();
const intervalMs = (1000 * options.connections) / options.rate;
let stopping = false;
const startedAtMs = epochMs();
let endedAtMs = startedAtMs;

/** One keep-alive connection's loop; resolves once it has stopped and its last request is settled. */
function runConnection(index: number): Promise<void> {
  return new Promise((resolve) => {
    let socket: Socket;
    let received: Buffer = Buffer.alloc(0);
    let current: { kind: (typeof kinds)[number]; sentAt: number; timer: NodeJS.Timeout } | null = null;
    // Spread the connections' first sends over one interval, so that the load starts even.
    let nextSendAt = performance.now() + (intervalMs * index) / options.connections;
    let finished = false;

    const finish = (): void => {
      if (finished) return;
      finished = true;
      socket.destroy();
      resolve();
    };
    const settle = (): void => {
      if (current !== null) clearTimeout(current.timer);
      current = null;
      if (stopping || exhausted !== null) finish();
      else schedule();
    };
    const unanswered = (reason: string): void => {
      if (current === null) return;
      current.kind.count.unanswered++;
      current.kind.count.sample ??= reason;
      settle();
    };
    const open = (): void => {
      received = Buffer.alloc(0);
      socket = connect(options.port, '127.0.0.1');
      socket.setNoDelay(true);
      socket.on('data', (chunk: Buffer) => {
        received = received.length === 0 ? chunk : Buffer.concat([received, chunk]);
        for (;;) {
          const answer = takeAnswer(received);
          if (answer === undefined) return;
          received = received.subarray(answer.length);
          if (current === null) {
            // An answer to nothing outstanding: a second answer to the last request.
            strayAnswers++;
            continue;
          }
          const now = performance.now();
          record(performance.timeOrigin + now, now - current.sentAt);
          endedAtMs = performance.timeOrigin + now;
          const verdict = classify(current.kind.expect, answer);
          current.kind.count[verdict]++;
          if (verdict === 'wrong') current.kind.count.sample ??= answerSample(answer);
          if (verdict === 'refused') current.kind.count.refusedSample ??= answerSample(answer);
          settle();
        }
      });
      socket.on('error', () => undefined);
      socket.on('close', () => {
        if (finished) return;
        unanswered('the connection closed before the answer');
        // The request is counted; carry on with a new connection unless the load is over.
        if (!finished) open();
      });
    };
    const send = (): void => {
      if (stopping || exhausted !== null) {
        finish();
        return;
      }
      const kind = pick();
      let body: string | undefined;
      if (kind.lines !== null) {
        body = kind.lines[kind.next];
        if (body === undefined) {
          exhausted ??= kind.name;
          finish();
          return;
        }
        kind.next++;
      }
      kind.count.sent++;
      const sentAt = performance.now();
      const timer = setTimeout(() => {
        unanswered(`no answer within ${options.deadlineMs} ms`);
        // The late answer must not be taken for the next request's: a fresh connection.
        if (!finished) {
          socket.removeAllListeners('close');
          socket.destroy();
          open();
        }
      }, options.deadlineMs);
      current = { kind, sentAt, timer };
      socket.write(requestBytes(kind.request, body, options.port));
    };
    const schedule = (): void => {
      nextSendAt = Math.max(nextSendAt + intervalMs, performance.now());
      const wait = nextSendAt - performance.now();
      if (wait <= 0) setImmediate(send);
      else setTimeout(send, wait);
    };
    open();
    setTimeout(send, Math.max(0, nextSendAt - performance.now()));
  });
}

process.send?.({ type: 'started' });
const loops = Array.from({ length: options.connections }, (_, i) => runConnection(i));
setTimeout(() => {
  stopping = true;
}, options.durationS * 1000);
await Promise.all(loops);

writeFileSync(options.samplesFile, new Uint8Array(samples.buffer, 0, sampleCount * 16));
const result: SteadyResult = {
  counts: kinds.map((kind) => kind.count),
  exhausted,
  startedAtMs,
  endedAtMs,
  samples: sampleCount,
  strayAnswers,
};
process.send?.({ type: 'result', result }, () => process.exit(0));
