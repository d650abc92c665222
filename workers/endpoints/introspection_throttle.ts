import { subjectDigest, type ThrottleLimits } from '../grants/failure_throttle.js';
import type { Store } from '../store/store.js';

/**
 * Stops an introspection caller from scanning for valid tokens (RFC 7662 §4: "the authorization
 * server MUST … prevent token scanning attacks"). Answers of `{"active":false}` are counted per
 * caller in the store, so the limit holds across threads and gateways; a caller past
 * `maxFailures` of them in a window gets `429` until the window ends. Active answers are not
 * counted and do not clear the count (a scanner cannot hide behind one valid token), so a caller
 * presenting valid tokens is never held back by another's scan.
 *
 * The block is remembered by the thread that counted past the limit: the happy path (an active
 * token) costs no store call. Another thread learns of it at the caller's next inactive answer,
 * whose count is already past the limit.
 */
export class IntrospectionThrottle {
  private readonly blockedUntil = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly limits: ThrottleLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /** Seconds until `caller` may introspect again, or 0. */
  retryAfterSeconds(caller: string): number {
    const until = this.blockedUntil.get(caller);
    if (until === undefined) return 0;
    const left = until - this.now();
    if (left > 0) return Math.max(1, Math.ceil(left / 1000));
    this.blockedUntil.delete(caller);
    return 0;
  }

  /** Counts an inactive answer; returns the seconds `caller` is now blocked for, or 0. */
  async recordInactive(caller: string): Promise<number> {
    const { count, resetInMs } = await this.store.increment(`introspect:${subjectDigest(caller)}`, this.limits.windowSeconds * 1000);
    if (count < this.limits.maxFailures) return 0;
    this.blockedUntil.set(caller, this.now() + resetInMs);
    return this.retryAfterSeconds(caller);
  }
}
