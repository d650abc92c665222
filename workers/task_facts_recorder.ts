/**
 * Notes the {@link TaskFacts} of the request a worker is answering, wherever in a grant they become
 * known (the access token signed, a replay detected, a password checked), on the record the
 * request carries (`GrantRequest.facts`, `SingleUseItem.facts`); `undefined` when the gateway did
 * not ask for facts at boot, and then each `note*` costs one check.
 *
 * An explicit record, not an AsyncLocalStorage: on Node 20 the first `run` of one turns on promise
 * hooks for every promise of the thread, which cost each token request several microseconds of
 * worker CPU (docs/decisions/0012-audit-events-cost.md). Only the trace spans' store commands,
 * which the store's observer sees far from any request object, still use one, and only when
 * tracing is on.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { maxTimedStoreCommands, type LoginFact, type ReusedItem, type TaskFacts } from '../wire/task_facts.js';

const timed = new AsyncLocalStorage<TaskFacts>();

/** Runs `answer` with `facts` as the record its store commands are timed into (tracing on). */
export async function timingStoreCommands<T>(facts: TaskFacts, answer: () => Promise<T>): Promise<T> {
  facts.timing = { start: epochNow(), end: 0, store: [] };
  const result = await timed.run(facts, answer);
  facts.timing.end = epochNow();
  return result;
}

/** Epoch milliseconds with this thread's sub-millisecond clock. */
function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

/** A store command of the request running now ended after `seconds` (the store's observer, tracing on). */
export function noteStoreCommand(command: string, seconds: number, failed: boolean): void {
  const timing = timed.getStore()?.timing;
  if (timing === undefined || timing.store.length >= maxTimedStoreCommands) return;
  const end = epochNow();
  timing.store.push([command, end - seconds * 1000, end, failed]);
}

export function noteIssued(facts: TaskFacts | undefined, jti: string, subject: string | undefined): void {
  if (facts === undefined) return;
  facts.jti = jti;
  if (subject !== undefined) facts.subject = subject;
}

export function noteReuse(facts: TaskFacts | undefined, item: ReusedItem, subject: string | undefined): void {
  if (facts === undefined) return;
  facts.reuse = item;
  if (subject !== undefined) facts.subject = subject;
}

export function noteLogin(facts: TaskFacts | undefined, login: LoginFact): void {
  if (facts === undefined) return;
  facts.login = login;
  if (login.subject !== undefined) facts.subject = login.subject;
}

export function noteRevoked(
  facts: TaskFacts | undefined,
  kind: 'access_token' | 'refresh_token',
  ids: { jti?: string; subject?: string },
): void {
  if (facts === undefined) return;
  facts.revoked = kind;
  if (ids.jti !== undefined) facts.jti = ids.jti;
  if (ids.subject !== undefined) facts.subject = ids.subject;
}
