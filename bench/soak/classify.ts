/**
 * What counts as answered in the soak (bench/README.md, "Soak and bursts"): an answer that meets
 * its request's expectation (served), or a 503 with Retry-After (refused: a bounded lane said no,
 * and told the client when to come back, docs/operations.md "Limits"). Anything else is a wrong
 * answer, and no answer by the deadline is unanswered: both fail the run.
 */
import { meets, type Expectation } from '../load/load_generator.js';
import type { Answer } from './http_answer.js';

export type Verdict = 'served' | 'refused' | 'wrong';

export function classify(expect: Expectation, answer: Pick<Answer, 'status' | 'retryAfter' | 'body'>): Verdict {
  if (meets(expect, answer.status, answer.body)) return 'served';
  if (answer.status === 503 && answer.retryAfter !== undefined) return 'refused';
  return 'wrong';
}

/** Per kind of request: what was sent, and what became of it. */
export interface TrafficCount {
  name: string;
  sent: number;
  served: number;
  refused: number;
  wrong: number;
  unanswered: number;
  /** Connections that got a second answer to their one request (bursts only). */
  answeredTwice: number;
  /** The first wrong answer (status and start of body), or the first reason one went unanswered. */
  sample: string | null;
  /** The first refusal (status and start of body): which bound said no. */
  refusedSample: string | null;
}

export function emptyCount(name: string): TrafficCount {
  return { name, sent: 0, served: 0, refused: 0, wrong: 0, unanswered: 0, answeredTwice: 0, sample: null, refusedSample: null };
}

/** Adds `from` into `into` (same kind, another burst). */
export function addCount(into: TrafficCount, from: TrafficCount): void {
  into.sent += from.sent;
  into.served += from.served;
  into.refused += from.refused;
  into.wrong += from.wrong;
  into.unanswered += from.unanswered;
  into.answeredTwice += from.answeredTwice;
  into.sample ??= from.sample;
  into.refusedSample ??= from.refusedSample;
}

/** A wrong answer, short enough for a table. */
export function answerSample(answer: Pick<Answer, 'status' | 'body'>): string {
  return `${answer.status} ${answer.body.slice(0, 160).replace(/[\r\n]/g, ' ')}`;
}
