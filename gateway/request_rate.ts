import { createHash } from 'node:crypto';
import type { Store } from '../workers/store/store.js';

export interface RateLimits {
  readonly maxRequests: number;
  readonly windowSeconds: number;
}

/**
 * A fixed-window request rate per subject, counted in the store so that it holds across
 * gateways. The decision is read off the store's own increment (one atomic command), so a
 * parallel burst cannot pass between a check and a count: of N requests in a window at most
 * `maxRequests` are let through. Subjects are hashed: no client id or address in store keys.
 */
export class RequestRate {
  constructor(
    private readonly store: Store,
    private readonly scope: string,
    private readonly limits: RateLimits,
  ) {}

  /** Counts one request of `subject`; resolves 0 when it may go on, else the seconds to wait. */
  async take(subject: string): Promise<number> {
    const name = `${this.scope}:${createHash('sha256').update(subject, 'utf8').digest('base64url')}`;
    const { count, resetInMs } = await this.store.increment(name, this.limits.windowSeconds * 1000);
    if (count <= this.limits.maxRequests) return 0;
    return Math.max(1, Math.ceil(resetInMs / 1000));
  }
}
