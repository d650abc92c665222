import { OAuthErrors } from '../../core/oauth_errors.js';
import type { Exchange } from '../http/exchange.js';
import type { ClientAuthThrottle, PendingAttempt } from '../../core/throttles.js';

/**
 * The throttle and the refusals every caller authentication shares: clients at every endpoint,
 * and API resources at introspection, whose secrets are guessed the same way.
 */
export class CallerGate {
  // RFC 6749 §5.2: a 401 after Basic names the scheme the client should retry with.
  private readonly challenge: { readonly wwwAuthenticate: string };

  constructor(
    private readonly throttle: ClientAuthThrottle,
    issuer: string,
  ) {
    this.challenge = { wwwAuthenticate: `Basic realm="${issuer}"` };
  }

  /**
   * Answers 429 and returns true when `id` is blocked; a blocked caller is refused even with the
   * right secret, or the block would limit nothing.
   */
  refuseBlocked(exchange: Exchange, id: string | undefined): boolean {
    const throttled = this.throttle.stateOf(id, exchange);
    if (!throttled.blocked) return false;
    exchange.sendError(OAuthErrors.tooManyFailedAttempts, { retryAfter: throttled.retryAfterSeconds });
    return true;
  }

  /** Counts a failed authentication of `id` and answers 401, with a Basic challenge when the Authorization header was used (RFC 6749 §5.2). */
  refuseFailed(
    exchange: Exchange,
    id: string | undefined,
    usedAuthorizationHeader: boolean,
    reason = 'unknown client, wrong or expired secret, or disabled client',
  ): void {
    this.throttle.recordFailure(id, exchange, reason);
    exchange.sendError(OAuthErrors.invalidClient, usedAuthorizationHeader ? this.challenge : undefined);
  }

  /**
   * Counts a client assertion against `id`'s limit before a worker checks it, and calls `then`
   * with the attempt to settle once it is checked; answers 429 itself when `id` is blocked.
   */
  admitAssertion(exchange: Exchange, id: string, then: (attempt: PendingAttempt) => void): void {
    this.throttle.admit(id, exchange, (admission) => {
      if (admission.admitted) {
        then(admission.attempt);
        return;
      }
      exchange.authFailure = 'blocked';
      exchange.sendError(OAuthErrors.tooManyFailedAttempts, { retryAfter: admission.retryAfterSeconds });
    });
  }

  /**
   * Answers 400 to a malformed Basic header, without a challenge: the request is malformed
   * (RFC 6749 §5.2 `invalid_request`), no credentials were tried. It names no client, so no
   * throttle counts it.
   */
  refuseMalformed(exchange: Exchange): void {
    exchange.sendError(OAuthErrors.malformedBasicCredentials);
  }

  /** Counts a request that used more than one authentication method as a failure and answers 400 (RFC 6749 §2.3). */
  refuseMultipleMethods(exchange: Exchange, id: string | undefined): void {
    this.throttle.recordFailure(id, exchange, 'more than one authentication method');
    exchange.sendError(OAuthErrors.multipleClientAuthMethods);
  }
}
