/**
 * The soak's bursts, in a process of their own (2,000 connects and their answers would otherwise
 * stall the steady load's clock). On each IPC `burst` message it opens one connection per request,
 * all at once, and writes each request in one write as soon as its connection is up, as a flood of
 * clients does. Each connection is read until its answer is complete and a little longer, to see a
 * second answer; none is waited for beyond `deadlineMs`. It answers with {@link BurstResult}.
 */
import { connect } from 'node:net';
import type { Expectation, LoadRequest } from '../load/load_generator.js';
import { answerSample, classify, emptyCount, type TrafficCount } from './classify.js';
import { requestBytes, takeAnswer } from './http_answer.js';

/** The requests of one kind in a burst: the request, and one body per connection (or count copies of its own). */
export interface BurstKind {
  name: string;
  request: LoadRequest;
  expect: Expectation;
  bodies: string[];
}

export interface BurstMessage {
  type: 'burst';
  id: number;
  port: number;
  deadlineMs: number;
  kinds: BurstKind[];
}

export interface BurstResult {
  id: number;
  counts: TrafficCount[];
  /** Epoch ms when the first connection was opened and when the last answer came (or the deadline). */
  startedAtMs: number;
  endedAtMs: number;
  /** Milliseconds from the burst's start to each answer. */
  latenciesMs: number[];
}

/** How long a connection is read after its answer, to catch a second one behind it. */
const secondAnswerWaitMs = 20;

async function fire(message: BurstMessage): Promise<BurstResult> {
  // Interleaved, so that every lane meets the burst at once rather than one kind after another.
  const items: { kind: BurstKind; count: TrafficCount; bytes: Buffer }[] = [];
  const counts = message.kinds.map((kind) => ({ kind, count: emptyCount(kind.name) }));
  for (let i = 0; items.length < counts.reduce((n, c) => n + c.kind.bodies.length, 0); i++) {
    for (const entry of counts) {
      const body = entry.kind.bodies[i];
      if (body === undefined) continue;
      items.push({ kind: entry.kind, count: entry.count, bytes: requestBytes(entry.kind.request, body, message.port) });
    }
  }
  const latenciesMs: number[] = [];
  const started = performance.now();
  let last = started;
  await Promise.all(
    items.map(
      (item) =>
        new Promise<void>((resolve) => {
          item.count.sent++;
          const socket = connect(message.port, '127.0.0.1');
          let received: Buffer = Buffer.alloc(0);
          let answers = 0;
          let settled = false;
          let reason = 'the connection closed before the answer';
          const finish = (): void => {
            if (settled) return;
            settled = true;
            clearTimeout(deadline);
            socket.destroy();
            if (answers === 0) {
              item.count.unanswered++;
              item.count.sample ??= reason;
            }
            resolve();
          };
          const deadline = setTimeout(
            () => {
              reason = `no answer within ${message.deadlineMs} ms`;
              last = Math.max(last, performance.now());
              finish();
            },
            Math.max(0, message.deadlineMs - (performance.now() - started)),
          );
          socket.on('connect', () => socket.write(item.bytes));
          socket.on('data', (chunk: Buffer) => {
            received = received.length === 0 ? chunk : Buffer.concat([received, chunk]);
            for (;;) {
              const answer = takeAnswer(received);
              if (answer === undefined) break;
              received = received.subarray(answer.length);
              answers++;
              if (answers > 1) {
                item.count.answeredTwice++;
                continue;
              }
              const now = performance.now();
              last = Math.max(last, now);
              latenciesMs.push(now - started);
              const verdict = classify(item.kind.expect, answer);
              item.count[verdict]++;
              if (verdict === 'wrong') item.count.sample ??= answerSample(answer);
              if (verdict === 'refused') item.count.refusedSample ??= answerSample(answer);
              setTimeout(finish, secondAnswerWaitMs);
            }
          });
          socket.on('error', (err) => {
            reason = `socket error: ${err.message}`;
            finish();
          });
          socket.on('close', finish);
        }),
    ),
  );
  return {
    id: message.id,
    counts: counts.map((c) => c.count),
    startedAtMs: performance.timeOrigin + started,
    endedAtMs: performance.timeOrigin + last,
    latenciesMs,
  };
}

process.on('message', (message: BurstMessage) => {
  if (message.type !== 'burst') return;
  void fire(message).then((result) => process.send?.({ type: 'result', result }));
});
process.on('disconnect', () => process.exit(0));
process.send?.({ type: 'started' });
