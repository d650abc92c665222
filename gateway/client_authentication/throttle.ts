import type { Logger } from 'pino';
import { FailureThrottle, type ThrottleState } from '../../workers/grants/failure_throttle.js';

const open: ThrottleState = Object.freeze({ blocked: false });

interface Entry {
  state: ThrottleState;
  /** When the store should be asked again. */
  refreshAt: number;
  refreshing: boolean;
}

/**
 * Limits failed client authentications per `client_id` without a store round trip on the hot
 * path (docs/endpoints.md): each gateway keeps what the store said about a client for up to `freshnessMs`
 * and refreshes it in the background, so a block set by another instance applies here within
 * that time, and one set here applies at once. Unknown client ids are not tracked: they can never
 * authenticate, and tracking them would let anyone grow this map.
 *
 * A store outage fails open: client authentication needs no store and keeps working.
 */
export class ClientAuthThrottle {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly throttle: FailureThrottle,
    private readonly isKnownClient: (clientId: string) => boolean,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
    private readonly freshnessMs = 1000,
  ) {}

  /** The client's state as this gateway knows it now; never waits. */
  stateOf(clientId: string | undefined): ThrottleState {
    if (clientId === undefined || !this.isKnownClient(clientId)) return open;
    const now = this.now();
    let entry = this.entries.get(clientId);
    if (entry === undefined) {
      entry = { state: open, refreshAt: 0, refreshing: false };
      this.entries.set(clientId, entry);
    }
    if (entry.refreshAt <= now && !entry.refreshing) this.refresh(clientId, entry);
    return expired(entry.state, now);
  }

  /** Counts a failed authentication; the block, if reached, applies here at once. */
  recordFailure(clientId: string | undefined): void {
    if (clientId === undefined || !this.isKnownClient(clientId)) return;
    this.throttle.recordFailure(clientId).then(
      (state) => {
        if (state.blocked)
          this.entries.set(clientId, {
            state: withDeadline(state, this.now()),
            refreshAt: this.now() + this.freshnessMs,
            refreshing: false,
          });
      },
      (err: unknown) => this.logger.warn({ err }, 'could not record a client authentication failure'),
    );
  }

  private refresh(clientId: string, entry: Entry): void {
    entry.refreshing = true;
    this.throttle.check(clientId).then(
      (state) => {
        entry.state = withDeadline(state, this.now());
        entry.refreshAt = this.now() + this.freshnessMs;
        entry.refreshing = false;
      },
      () => {
        entry.refreshAt = this.now() + this.freshnessMs;
        entry.refreshing = false;
      },
    );
  }
}

// States carry an absolute deadline internally so that Retry-After keeps counting down.
const deadlines = new WeakMap<ThrottleState, number>();

function withDeadline(state: ThrottleState, now: number): ThrottleState {
  if (state.blocked) deadlines.set(state, now + state.retryAfterSeconds * 1000);
  return state;
}

function expired(state: ThrottleState, now: number): ThrottleState {
  if (!state.blocked) return state;
  const until = deadlines.get(state) ?? now;
  if (until <= now) return open;
  return { blocked: true, retryAfterSeconds: Math.max(1, Math.ceil((until - now) / 1000)) };
}

export { FailureThrottle };
