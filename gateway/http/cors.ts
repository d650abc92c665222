import type { HttpRequest } from 'uWebSockets.js';
import type { Exchange } from './exchange.js';

/** Where store-kept clients' origins are found (gateway/client_registry/cors_origins.ts). */
export interface OriginLookup {
  cached(origin: string): boolean | undefined;
  lookup(origin: string): Promise<boolean>;
}

/**
 * Cross-origin requests from browser clients (the Fetch standard's CORS protocol) to the
 * endpoints a single-page application calls: token, revocation, UserInfo, discovery and JWKS.
 * An origin is allowed when any enabled client lists it in `allowedCorsOrigins`, as
 * IdentityServer's default CORS policy decides: a preflight does not say which client asks, and
 * CORS only decides what a browser page may read, not who may call; each request still
 * authenticates its client (docs/endpoints.md, "CORS").
 *
 * With a client registry, store-kept clients' origins count too (`stored`): an origin the config
 * file does not list is looked up once and the answer cached; the answer to a request whose
 * origin is being looked up waits for it (`Exchange.corsLookup`), so its CORS headers say what
 * the lookup found. A request without `Origin`, or with a config file client's, costs nothing more.
 */
export class CorsPolicy {
  private readonly origins: ReadonlySet<string>;

  constructor(
    clients: Iterable<{ readonly enabled: boolean; readonly allowedCorsOrigins: readonly string[] }>,
    private readonly stored?: OriginLookup | undefined,
  ) {
    const origins = new Set<string>();
    for (const client of clients) if (client.enabled) for (const origin of client.allowedCorsOrigins) origins.add(origin);
    this.origins = origins;
  }

  /** No client lists an origin, nor can a store-kept one: the endpoints then read no `Origin` header at all. */
  get empty(): boolean {
    return this.origins.size === 0 && this.stored === undefined;
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
    if (origin.length === 0) return;
    if (this.origins.has(origin)) {
      exchange.allowOrigin = origin;
      return;
    }
    const stored = this.stored;
    if (stored === undefined) return;
    const known = stored.cached(origin);
    if (known === true) exchange.allowOrigin = origin;
    else if (known === undefined) {
      exchange.corsLookup = stored.lookup(origin).then((allowed) => {
        if (allowed) exchange.allowOrigin = origin;
        exchange.corsLookup = undefined;
      });
    }
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
    const allowed = origin.length === 0 ? false : this.origins.has(origin) || this.stored?.cached(origin);
    if (allowed === undefined && this.stored !== undefined) {
      void this.stored.lookup(origin).then((found) => answerPreflight(exchange, found ? origin : undefined, methods));
      return true;
    }
    answerPreflight(exchange, allowed === true ? origin : undefined, methods);
    return true;
  }
}

function answerPreflight(exchange: Exchange, origin: string | undefined, methods: string): void {
  if (origin === undefined) exchange.sendPreflight(403, undefined, methods);
  else exchange.sendPreflight(204, origin, methods);
}
