import type { HttpRequest } from 'uWebSockets.js';
import type { Exchange } from './exchange.js';

/**
 * Cross-origin requests from browser clients (the Fetch standard's CORS protocol) to the
 * endpoints a single-page application calls: token, revocation, UserInfo, discovery and JWKS.
 * An origin is allowed when any enabled client lists it in `allowedCorsOrigins`, as
 * IdentityServer's default CORS policy decides: a preflight does not say which client asks, and
 * CORS only decides what a browser page may read, not who may call; each request still
 * authenticates its client (docs/endpoints.md, "CORS").
 */
export class CorsPolicy {
  private readonly origins: ReadonlySet<string>;

  constructor(clients: Iterable<{ readonly enabled: boolean; readonly allowedCorsOrigins: readonly string[] }>) {
    const origins = new Set<string>();
    for (const client of clients) if (client.enabled) for (const origin of client.allowedCorsOrigins) origins.add(origin);
    this.origins = origins;
  }

  /** No client lists an origin: the endpoints then read no `Origin` header at all. */
  get empty(): boolean {
    return this.origins.size === 0;
  }

  /**
   * Marks `exchange` to answer with `Access-Control-Allow-Origin` when the request's `Origin` is
   * allowed, and with `Vary: Origin` whatever it is: the answer depends on `Origin`, so a shared
   * cache must key on it (discovery and JWKS are cacheable). Reads the header synchronously,
   * while uWS's request object lives.
   */
  mark(exchange: Exchange, req: HttpRequest): void {
    exchange.varyOrigin = true;
    const origin = req.getHeader('origin');
    if (origin.length > 0 && this.origins.has(origin)) exchange.allowOrigin = origin;
  }

  /**
   * The CORS step in front of an endpoint that accepts `methods`: a preflight is answered here
   * (returns true, the request is done); any other request is marked (see {@link mark}).
   */
  answerPreflightOrMark(exchange: Exchange, req: HttpRequest, method: string, methods: string): boolean {
    if (method === 'options' && this.answerPreflight(exchange, req, methods)) return true;
    this.mark(exchange, req);
    return false;
  }

  /**
   * Answers a preflight (`OPTIONS` with `Access-Control-Request-Method`): `204` with what the
   * endpoint accepts when the origin is allowed, else `403` without CORS headers, which the
   * browser turns into a failed request. Returns false when `req` is no preflight.
   */
  answerPreflight(exchange: Exchange, req: HttpRequest, methods: string): boolean {
    const requested = req.getHeader('access-control-request-method');
    if (requested.length === 0) return false;
    const origin = req.getHeader('origin');
    if (origin.length === 0 || !this.origins.has(origin)) {
      exchange.sendPreflight(403, undefined, methods);
      return true;
    }
    exchange.sendPreflight(204, origin, methods);
    return true;
  }
}
