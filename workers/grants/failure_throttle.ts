import { hash } from 'node:crypto';
import type { Store } from '../store/store.js';

export interface ThrottleLimits {
  readonly maxFailures: number;
  readonly windowSeconds: number;
}

export type ThrottleState =
  | { readonly blocked: false }
  | {
      readonly blocked: true;
      readonly retryAfterSeconds: number;
      /** The first refusal of this block ({@link FailureThrottle.attempt}): when a block starts, for its one log line. */
      readonly firstRefusal?: boolean;
    };

const open: ThrottleState = Object.freeze({ blocked: false });

/**
 * Counts failures per subject (a username at a client, a client id) in the store, so the limit
 * holds across gateway instances. After `maxFailures` failures in a window, the subject is blocked
 * until the window ends; a success clears the count. Subjects are hashed: usernames and client
 * ids do not appear in store keys.
 */
export class FailureThrottle {
  constructor(
    private readonly store: Store,
    private readonly scope: string,
    private readonly limits: ThrottleLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Counts an attempt **before** it is evaluated and decides on that count: the store's increment
   * is one atomic command, so of a parallel burst at most `maxFailures` attempts go on, whatever
   * their timing (docs/security.md). The attempts from `maxFailures + 1` on are refused until the
   * window ends. A success must call {@link recordSuccess}, which clears the count.
   */
  async attempt(subject: string): Promise<ThrottleState> {
    const { count, resetInMs } = await this.store.increment(this.counterName(subject), this.limits.windowSeconds * 1000);
    if (count <= this.limits.maxFailures) return open;
    return {
      blocked: true,
      retryAfterSeconds: Math.max(1, Math.ceil(resetInMs / 1000)),
      firstRefusal: count === this.limits.maxFailures + 1,
    };
  }

  /** Takes back an attempt counted by {@link attempt} that turned out good (not a guess). */
  async refund(subject: string): Promise<void> {
    await this.store.increment(this.counterName(subject), this.limits.windowSeconds * 1000, -1);
  }

  async check(subject: string): Promise<ThrottleState> {
    const lock = await this.store.get<{ until: number }>(this.lockKey(subject));
    return lock === null ? open : blockedUntil(lock.until, this.now());
  }

  /** Counts a failure; returns whether the subject is blocked from now on. */
  async recordFailure(subject: string): Promise<ThrottleState> {
    const { count, resetInMs } = await this.store.increment(this.counterName(subject), this.limits.windowSeconds * 1000);
    if (count < this.limits.maxFailures) return open;
    const until = this.now() + resetInMs;
    await this.store.set(this.lockKey(subject), { until }, Math.max(1, resetInMs));
    return blockedUntil(until, this.now());
  }

  async recordSuccess(subject: string): Promise<void> {
    await this.store.resetCounter(this.counterName(subject));
  }

  private counterName(subject: string): string {
    return `${this.scope}:${subjectDigest(subject)}`;
  }

  private lockKey(subject: string) {
    return { kind: 'misc', id: `lock:${this.scope}:${subjectDigest(subject)}` } as const;
  }
}

/** Blocks whose end is waited for at once, per process: an attacker spraying subjects cannot grow it. */
const maxWatchedBlocks = 10_000;
let watchedBlocks = 0;

/**
 * Calls `onEnd` when a block that {@link FailureThrottle.attempt} just started ends, so the block
 * has one line at its start and one at its end (docs/security.md, "Security event logs"). Only the
 * attempt that started the block (`firstRefusal`, unique across gateways by the store's atomic
 * count) schedules it, so a fleet logs each end once. The block ends when its counting window does;
 * nothing is read from the store for it. A timer, not a later attempt, tells the end: a subject
 * that never comes back still gets its line. Lost if the process stops first; beyond
 * `maxWatchedBlocks` waiting at once, ends are not logged (starts still are).
 */
export function whenBlockEnds(state: ThrottleState, onEnd: () => void): void {
  if (!state.blocked || state.firstRefusal !== true || watchedBlocks >= maxWatchedBlocks) return;
  watchedBlocks++;
  setTimeout(() => {
    watchedBlocks--;
    onEnd();
  }, state.retryAfterSeconds * 1000).unref();
}

function blockedUntil(until: number, now: number): ThrottleState {
  if (until <= now) return open;
  return { blocked: true, retryAfterSeconds: Math.max(1, Math.ceil((until - now) / 1000)) };
}

/** A throttle's subject as its store keys carry it: hashed, so usernames and client ids never appear in keys (docs/storage.md). */
export function subjectDigest(subject: string): string {
  return hash('sha256', subject, 'base64url');
}
