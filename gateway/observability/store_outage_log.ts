import type { Logger } from 'pino';

/**
 * Logs a store outage once, not once per refused request (docs/operations.md, "Logs"): a warning
 * at the first request answered 503 because the store failed, and, once no request has failed for
 * `quietMs`, one line with how many failed and for how long. A Redis outage under load would
 * otherwise write a line per request, burying everything else.
 */
export class StoreOutageLog {
  private failures = 0;
  private firstAt = 0;
  private lastAt = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly quietMs = 5000,
    private readonly now: () => number = Date.now,
  ) {}

  /** One request answered 503 because the store failed. */
  failed(): void {
    const now = this.now();
    if (this.failures === 0) {
      this.firstAt = now;
      this.logger.warn('store unavailable: requests that need it are answered 503 until it serves again');
      this.timer = setInterval(this.check, Math.max(50, this.quietMs / 5));
      this.timer.unref();
    }
    this.failures += 1;
    this.lastAt = now;
  }

  /** Ends the outage's record at stop, so its count is not lost. */
  close(): void {
    if (this.failures > 0) this.end();
  }

  private readonly check = (): void => {
    if (this.now() - this.lastAt >= this.quietMs) this.end();
  };

  private end(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.logger.warn(
      { failedRequests: this.failures, durationMs: this.lastAt - this.firstAt, quietMs: this.quietMs },
      'store outage over: no request failed on the store for quietMs',
    );
    this.failures = 0;
  }
}
