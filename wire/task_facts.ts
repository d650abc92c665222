/**
 * What a worker learned while it answered one request, sent back beside the answer as plain
 * data: the gateway turns it into audit events, metrics and log lines (docs/operations.md,
 * "Events"). A worker never emits events itself; only the gateway thread owns the sinks.
 *
 * Never a token, a code, a secret or a password: identifiers only.
 */
export interface TaskFacts {
  /** The `sub` of the tokens issued (absent for a client-only token). */
  subject?: string;
  /** The `jti` of the access token issued, or of the access token a revocation put on the deny list. */
  jti?: string;
  /** A retired single-use item came back and the tokens it was exchanged for were revoked (RFC 9700 §4.14.2). */
  reuse?: ReusedItem;
  /** A password check ran (password grant or a login page): who tried, and how it ended. */
  login?: LoginFact;
  /** The revocation endpoint revoked something of the caller's (RFC 7009 §2.1). */
  revoked?: 'access_token' | 'refresh_token';
  /** The request was answered 503 because the store failed (the gateway logs an outage once). */
  storeUnavailable?: true;
  /** When the worker ran the request, and its store commands: for trace spans, when tracing is on. */
  timing?: TaskTiming;
}

/**
 * Epoch milliseconds (fractional) as this worker thread's clock gives them
 * (`performance.timeOrigin + performance.now()`), so the gateway thread can place them on its own.
 */
export interface TaskTiming {
  start: number;
  end: number;
  /** `[command, start, end, failed]` of each store command, the first {@link maxTimedStoreCommands}. */
  store: [command: string, start: number, end: number, failed: boolean][];
}

/** A request's store commands recorded for its trace; a grant makes a handful, a loop no more than these. */
export const maxTimedStoreCommands = 32;

/** Which single-use item was presented twice. */
export type ReusedItem = 'refresh_token' | 'authorization_code' | 'device_code';

export interface LoginFact {
  readonly username: string;
  readonly success: boolean;
  /** Set on success. */
  readonly subject?: string;
  /** Why it failed: `wrong_credentials` or `blocked` (the failure throttle). */
  readonly reason?: 'wrong_credentials' | 'blocked';
}
