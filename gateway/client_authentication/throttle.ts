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
  /** Attempts admitted to a check that runs elsewhere (a worker) and not settled: counted against the limit meanwhile. */
  pending: number;
  /** Until when this caller is known good: an assertion of it verified within the last window. */
  provenUntil: number;
  /** Attempts held until an attempt in flight settles, in arrival order. */
  waiting: Array<(admitted: boolean) => void> | undefined;
}

/** Callers tracked at once; past it the oldest client's entries are dropped (docs/security.md). */
const maxEntries = 100_000;
/** Attempts one caller may have held at once; more are answered `429` at once. */
const maxWaiting = 1024;

/** An attempt admitted by {@link ClientAuthThrottle.admit}; exactly one of its methods settles it, later calls do nothing. */
export interface PendingAttempt {
  /** The credential was refused (a bad signature, no fitting key): a failure, like a wrong secret. */
  failed(reason: string): void;
  /** The credential verified: the caller is known good for a window. */
  passed(): void;
  /** Nothing was learnt about the credential (a replay, a store outage, answered before any check): counts nothing. */
  release(): void;
}

/** What {@link ClientAuthThrottle.admit} answers: the attempt to settle, or the block that refused it. */
export type Admission =
  | { readonly admitted: true; readonly attempt: PendingAttempt }
  | { readonly admitted: false; readonly retryAfterSeconds: number };

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
 *   Except a client assertion, whose signature a worker checks later: it is counted as a failure
 *   while in flight ({@link admit}), so a parallel burst gets at most `maxFailures` verified; the
 *   rest wait for the first answers. A caller whose assertion verified in the current window is
 *   not held back: a client's own burst must not queue behind its own requests.
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
    if (entry.windowEndsAt <= now) {
      if (entry.blockedUntil > 0) this.logger.info({ clientId, address: from }, 'client authentication block ended');
      // Reset in place, once: an entry still needed (attempts in flight, known good) stays.
      this.renew(entry);
      this.forget(clientId, callers, from, entry);
    }
    return open;
  }

  /**
   * Admits an attempt whose check runs elsewhere (a client assertion's signature, in a worker),
   * counting it against the limit **before** it is checked: `then` gets the attempt to settle
   * once the check answers, or the block. While the failures and the attempts in flight fill the
   * limit, a caller not known good waits for one of them to settle (at most {@link maxWaiting}):
   * so of a parallel burst of bad assertions at most `maxFailures` are verified, and a good
   * client's first burst is only delayed, never refused.
   */
  admit(clientId: string, peer: Peer, then: (admission: Admission) => void): void {
    const from = peer.remoteAddress();
    const entry = this.entryOf(clientId, from);
    const now = this.now();
    if (entry.blockedUntil > now) {
      then({ admitted: false, retryAfterSeconds: Math.max(1, Math.ceil((entry.blockedUntil - now) / 1000)) });
      return;
    }
    if (entry.waiting === undefined && this.hasRoom(entry, now)) {
      then(this.reserve(entry, clientId, from));
      return;
    }
    entry.waiting ??= [];
    if (entry.waiting.length >= maxWaiting) {
      then({ admitted: false, retryAfterSeconds: 1 });
      return;
    }
    entry.waiting.push((admitted) => {
      if (admitted) then(this.reserve(entry, clientId, from));
      else then({ admitted: false, retryAfterSeconds: Math.max(1, Math.ceil((entry.blockedUntil - this.now()) / 1000)) });
    });
  }

  /** Counts a failed authentication; the block, once reached, applies at once. */
  recordFailure(clientId: string | undefined, peer: Peer, reason: string): void {
    if (clientId === undefined) return;
    this.countFailure(clientId, peer.remoteAddress(), reason);
  }

  private hasRoom(entry: Entry, now: number): boolean {
    return entry.provenUntil > now || entry.failures + entry.pending < this.limits.maxFailures;
  }

  private reserve(entry: Entry, clientId: string, from: string): Admission {
    entry.pending += 1;
    let settled = false;
    const settle = (outcome: 'failed' | 'passed' | 'released', reason?: string): void => {
      if (settled) return;
      settled = true;
      entry.pending -= 1;
      if (outcome === 'passed') entry.provenUntil = this.now() + this.limits.windowSeconds * 1000;
      // A failure ends the trust: what follows from this caller is counted in flight again.
      if (outcome === 'failed') {
        entry.provenUntil = 0;
        this.countFailure(clientId, from, reason ?? 'client assertion refused', entry);
      }
      this.admitWaiting(entry, clientId, from);
    };
    return {
      admitted: true,
      attempt: {
        failed: (reason) => settle('failed', reason),
        passed: () => settle('passed'),
        release: () => settle('released'),
      },
    };
  }

  /** Lets held attempts go on as room frees up, or refuses them all once the caller is blocked. */
  private admitWaiting(entry: Entry, clientId: string, from: string): void {
    const waiting = entry.waiting;
    if (waiting === undefined) return;
    this.renew(entry);
    const now = this.now();
    while (waiting.length > 0) {
      const blocked = entry.blockedUntil > now;
      if (!blocked && !this.hasRoom(entry, now)) return;
      (waiting.shift() as (admitted: boolean) => void)(!blocked);
    }
    entry.waiting = undefined;
    if (entry.pending === 0 && entry.failures === 0 && entry.provenUntil <= now) {
      const callers = this.byClient.get(clientId);
      if (callers !== undefined) this.forget(clientId, callers, from, entry);
    }
  }

  private countFailure(clientId: string, from: string, reason: string, known?: Entry): void {
    // Security events (docs/operations.md, "Logs"): who, from where, why; never the secret.
    this.logger.info({ clientId, address: from, reason }, 'client authentication failed');
    const entry = known ?? this.entryOf(clientId, from);
    this.renew(entry);
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

  private forget(clientId: string, callers: Map<string, Entry>, address: string, entry: Entry): void {
    // An entry with attempts in flight or held, or a known-good caller, is still needed.
    if (entry.pending > 0 || entry.waiting !== undefined || entry.provenUntil > this.now()) return;
    if (callers.get(address) !== entry || !callers.delete(address)) return;
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
    if (entry === undefined) {
      this.entries += 1;
      entry = {
        failures: 0,
        windowEndsAt: now + this.limits.windowSeconds * 1000,
        blockedUntil: 0,
        pending: 0,
        provenUntil: 0,
        waiting: undefined,
      };
      callers.set(address, entry);
    }
    this.renew(entry);
    return entry;
  }

  /** Starts a new counting window when the last one ended and no block holds (in place: attempts in flight keep the entry). */
  private renew(entry: Entry): void {
    const now = this.now();
    if (entry.windowEndsAt > now || entry.blockedUntil > now) return;
    entry.failures = 0;
    entry.windowEndsAt = now + this.limits.windowSeconds * 1000;
    entry.blockedUntil = 0;
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
