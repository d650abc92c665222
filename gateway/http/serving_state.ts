/**
 * One gateway's answers in progress, and whether it drains (docs/operations.md, "Signals and
 * shutdown"). While it drains every answer closes its connection (`Connection: close`), so a
 * keep-alive client opens its next connection, which the balancer sends to another gateway; the
 * stop waits until no request that arrived is left unanswered before it closes the connections.
 */
export class ServingState {
  /** A graceful stop has begun: `/readyz` answers 503 and every answer closes its connection. */
  draining = false;
  private open = 0;
  private idleWaiters: (() => void)[] = [];

  /** Requests read and not answered yet (an aborted one counts as answered). */
  get inFlight(): number {
    return this.open;
  }

  /** A request began ({@link Exchange}'s constructor). */
  begin(): void {
    this.open++;
  }

  /** A request was answered, or its client went away. */
  end(): void {
    this.open--;
    if (this.open === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  /** Resolves when no request is in flight. */
  idle(): Promise<void> {
    if (this.open === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}

/**
 * The state of the gateway whose route handler runs right now. Set by the route table around each
 * handler's synchronous part, in which every handler builds its {@link Exchange}: the exchange
 * finds its gateway without a parameter through every endpoint, and several gateways in one
 * process (tests, embedding code) each keep their own.
 */
let current: ServingState | undefined;

export function servingNow(): ServingState | undefined {
  return current;
}

/** Calls `handler(res, req)` with `state` as {@link servingNow} (arguments passed on: no closure per request). */
export function serveWith<A, B, T>(state: ServingState, handler: (a: A, b: B) => T, a: A, b: B): T {
  const previous = current;
  current = state;
  try {
    return handler(a, b);
  } finally {
    current = previous;
  }
}
