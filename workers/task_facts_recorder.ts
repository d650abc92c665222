/**
 * Collects the {@link TaskFacts} of the request a worker is answering, wherever in a grant they
 * become known (the access token signed, a replay detected, a password checked), without passing
 * a context object through every grant and validator. Off unless the gateway asked for facts at
 * boot: then `note*` find no store and cost one lookup.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { maxTimedStoreCommands, type LoginFact, type ReusedItem, type TaskFacts } from './protocol/task_facts.js';

const current = new AsyncLocalStorage<TaskFacts>();

/**
 * Runs `answer` with a fresh record of facts; resolves the answer and what was noted. With
 * `timed`, also when it ran and its store commands (for trace spans).
 */
export async function recordingFacts<T>(answer: () => Promise<T>, timed = false): Promise<[T, TaskFacts]> {
  const facts: TaskFacts = {};
  if (timed) facts.timing = { start: epochNow(), end: 0, store: [] };
  const result = await current.run(facts, answer);
  if (facts.timing !== undefined) facts.timing.end = epochNow();
  return [result, facts];
}

/** Epoch milliseconds with this thread's sub-millisecond clock. */
function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

/** A store command of the request running now ended after `seconds` (the store's observer). */
export function noteStoreCommand(command: string, seconds: number, failed: boolean): void {
  const timing = current.getStore()?.timing;
  if (timing === undefined || timing.store.length >= maxTimedStoreCommands) return;
  const end = epochNow();
  timing.store.push([command, end - seconds * 1000, end, failed]);
}

/** The facts of the request running now, to add to from a `catch` (a store failure). */
export function currentFacts(): TaskFacts | undefined {
  return current.getStore();
}

export function noteIssued(jti: string, subject: string | undefined): void {
  const facts = current.getStore();
  if (facts === undefined) return;
  facts.jti = jti;
  if (subject !== undefined) facts.subject = subject;
}

export function noteReuse(item: ReusedItem, subject: string | undefined): void {
  const facts = current.getStore();
  if (facts === undefined) return;
  facts.reuse = item;
  if (subject !== undefined) facts.subject = subject;
}

export function noteLogin(login: LoginFact): void {
  const facts = current.getStore();
  if (facts === undefined) return;
  facts.login = login;
  if (login.subject !== undefined) facts.subject = login.subject;
}

export function noteRevoked(kind: 'access_token' | 'refresh_token', ids: { jti?: string; subject?: string }): void {
  const facts = current.getStore();
  if (facts === undefined) return;
  facts.revoked = kind;
  if (ids.jti !== undefined) facts.jti = ids.jti;
  if (ids.subject !== undefined) facts.subject = ids.subject;
}
