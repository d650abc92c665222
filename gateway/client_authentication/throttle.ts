import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { ThrottleLimits, ThrottleState } from '../../workers/grants/failure_throttle.js';
import type { Store } from '../../workers/store/store.js';

const open: ThrottleState = Object.freeze({ blocked: false });

/** Where a request came from: the Exchange, whose address is read only when a throttle needs it. */
export interface Peer {
  remoteAddress(): string;
}

/** Failures of one caller (a client id from one address) in the current window. */
interface Entry {
  failures: number;
  windowEndsAt: number;
  blockedUntil: number;
}

/** Callers tracked at once; past it the oldest client's entries are dropped (docs/security.md). */
const maxEntries = 100_000;

/**
 * Limits failed client authentications per **client id and source address** (docs/security.md,
 * "Throttles"):
 *
 * - A stranger who sends wrong secrets for a client blocks only their own address: the client,
 *   calling from its own address, keeps authenticating. Nobody can lock a client out.
 * - Unknown client ids are counted exactly like known ones, so a `429` tells nothing about which
 *   ids exist (and an unknown id already costs the same secret comparison as a wrong secret).
 * - Failures are counted here synchronously, on the one thread that authenticates: a parallel
 *   burst of wrong secrets gets at most `maxFailures` evaluated by this gateway. Each failure is
 *   also counted in the store, whose count blocks the address here as soon as it reaches the
 *   limit, so failures spread over several gateways add up.
 * - A caller that has never failed costs nothing: no store call, not even its address is read.
 * - A store outage fails open on the store's share; the local count still applies.
 */
export class ClientAuthThrottle {
  private readonly byClient = new Map<string, Map<string, Entry>>();
  private entries = 0;

  constructor(
    private readonly store: Store,
    private readonly limits: ThrottleLimits,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** The caller's state now; never waits. The peer's address is only read for a client with failures. */
  stateOf(clientId: string | undefined, peer: Peer): ThrottleState {
    if (clientId === undefined) return open;
    const callers = this.byClient.get(clientId);
    if (callers === undefined) return open;
    const from = peer.remoteAddress();
    const entry = callers.get(from);
    if (entry === undefined) return open;
    const now = this.now();
    if (entry.blockedUntil > now) return { blocked: true, retryAfterSeconds: Math.max(1, Math.ceil((entry.blockedUntil - now) / 1000)) };
    if (entry.blockedUntil > 0 && entry.windowEndsAt <= now) {
      this.logger.info({ clientId, address: from }, 'client authentication block ended');
    }
    if (entry.windowEndsAt <= now) this.forget(clientId, callers, from);
    return open;
  }

  /** Counts a failed authentication; the block, once reached, applies at once. */
  recordFailure(clientId: string | undefined, peer: Peer, reason: string): void {
    if (clientId === undefined) return;
    const from = peer.remoteAddress();
    // Security events (docs/operations.md, "Logs"): who, from where, why; never the secret.
    this.logger.info({ clientId, address: from, reason }, 'client authentication failed');
    const entry = this.entryOf(clientId, from);
    entry.failures += 1;
    const caller = { clientId, address: from };
    if (entry.failures >= this.limits.maxFailures) this.block(entry, entry.windowEndsAt, caller);
    const counter = `client:${createHash('sha256').update(`${clientId}\u0000${from}`, 'utf8').digest('base64url')}`;
    this.store.increment(counter, this.limits.windowSeconds * 1000).then(
      ({ count, resetInMs }) => {
        if (count >= this.limits.maxFailures) this.block(entry, this.now() + resetInMs, caller);
      },
      (err: unknown) => this.logger.warn({ err }, 'could not record a client authentication failure'),
    );
  }

  private block(entry: Entry, until: number, caller: { clientId: string; address: string }): void {
    if (until <= entry.blockedUntil) return;
    const startsNow = entry.blockedUntil <= this.now();
    entry.blockedUntil = until;
    // One line per block, never per refused request: which caller, for how long, never a secret.
    if (startsNow) {
      const retryAfterSeconds = Math.ceil((until - this.now()) / 1000);
      this.logger.info({ ...caller, retryAfterSeconds, reason: 'failed client authentications' }, 'client authentication blocked');
    }
  }

  private forget(clientId: string, callers: Map<string, Entry>, address: string): void {
    if (!callers.delete(address)) return;
    this.entries -= 1;
    if (callers.size === 0) this.byClient.delete(clientId);
  }

  private entryOf(clientId: string, address: string): Entry {
    const now = this.now();
    let callers = this.byClient.get(clientId);
    if (callers === undefined) {
      if (this.entries >= maxEntries) this.evictOldest();
      callers = new Map();
      this.byClient.set(clientId, callers);
    }
    let entry = callers.get(address);
    if (entry === undefined || (entry.windowEndsAt <= now && entry.blockedUntil <= now)) {
      if (entry === undefined) this.entries += 1;
      entry = { failures: 0, windowEndsAt: now + this.limits.windowSeconds * 1000, blockedUntil: 0 };
      callers.set(address, entry);
    }
    return entry;
  }

  /** Drops the entries of the client tracked longest: a flood of fresh ids must not grow this without end. */
  private evictOldest(): void {
    for (const [clientId, callers] of this.byClient) {
      this.entries -= callers.size;
      this.byClient.delete(clientId);
      return;
    }
  }
}
