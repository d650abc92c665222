/**
 * Every throttle and rate Tessera keeps, counted in the store so that a limit holds across threads
 * and gateways (docs/security.md, "Throttles"), and the one hash of their subjects:
 *
 * - {@link FailureThrottle}: failed password checks per client, address and user (workers);
 * - {@link IntrospectionThrottle}: inactive introspection answers per caller (workers);
 * - {@link RequestRate}: device authorizations per client and address (gateway);
 * - {@link ClientAuthThrottle}: failed client authentications per client id and address (gateway).
 */
import { hash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Store } from './store/store.js';

/**
 * A throttle's subject as its store keys carry it: hashed, so usernames, client ids and addresses
 * never appear in keys (docs/storage.md).
 */
export function subjectDigest(subject: string): string {
  return hash('sha256', subject, 'base64url');
}

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
    const name = `${this.scope}:${subjectDigest(subject)}`;
    const { count, resetInMs } = await this.store.increment(name, this.limits.windowSeconds * 1000);
    if (count <= this.limits.maxRequests) return 0;
    return Math.max(1, Math.ceil(resetInMs / 1000));
  }
}

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
    const counter = `client:${subjectDigest(`${clientId}\u0000${from}`)}`;
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
