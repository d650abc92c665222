import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { OAuthErrors } from '../../core/oauth_errors.js';
import { Exchange } from './exchange.js';

type RouteHandler = (res: HttpResponse, req: HttpRequest) => void | Promise<void>;

/**
 * Whether the request's body length is ambiguous (RFC 9112 §6.1, §6.3): two different
 * `Content-Length` values, an empty one, `Transfer-Encoding` together with `Content-Length`, or a transfer
 * coding other than `chunked` alone. A server and a proxy in front of it that disagree on where
 * the body ends disagree on where the next request starts (request smuggling, RFC 9112 §11.2).
 *
 * uWS parses HTTP in C++ and checks some of this itself (both headers together); it reads only
 * the first `Content-Length` and takes any `Transfer-Encoding` as chunked. Every header, repeated
 * ones included, is visible here before uWS reads the body.
 */
export function hasAmbiguousFraming(req: HttpRequest): boolean {
  let contentLength: string | undefined;
  let transferEncodings = 0;
  let ambiguous = false;
  req.forEach((name, value) => {
    if (name === 'content-length') {
      // RFC 9112 §6.3: repeated identical values may be taken as one. uWS refuses values that
      // are not digits, but takes an empty one as no body (RFC 9110 §8.6: 1*DIGIT).
      if (value === '' || (contentLength !== undefined && value !== contentLength)) ambiguous = true;
      contentLength = value;
    } else if (name === 'transfer-encoding') {
      // Coding names are case-insensitive (RFC 9112 §7); a second header extends the list.
      if (++transferEncodings > 1 || value.toLowerCase() !== 'chunked') ambiguous = true;
    }
  });
  return ambiguous || (contentLength !== undefined && transferEncodings > 0);
}

/** The uWS methods that register a route handler. */
const routeRegistrations = new Set<PropertyKey>(['any', 'get', 'post', 'put', 'del', 'patch', 'options', 'head', 'connect', 'trace']);

/**
 * The app as the routes see it: every handler registered through it first refuses a request
 * with ambiguous framing, `400 invalid_request`, and closes the connection before uWS reads
 * anything after it (docs/operations.md, "HTTP framing"). Everything else is the app itself.
 */
export function withStrictFraming(app: TemplatedApp): TemplatedApp {
  const routes: TemplatedApp = new Proxy(app, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property);
      if (typeof value !== 'function') return value;
      // uWS's native methods need the app itself as `this`.
      if (!routeRegistrations.has(property)) return value.bind(target);
      return (pattern: string, handler: RouteHandler) => {
        value.call(target, pattern, refusingAmbiguousFraming(handler));
        return routes;
      };
    },
  });
  return routes;
}

function refusingAmbiguousFraming(handler: RouteHandler): RouteHandler {
  return (res, req) => {
    if (hasAmbiguousFraming(req)) {
      new Exchange(res, req.getMethod()).refuseAndClose(OAuthErrors.ambiguousFraming);
      return;
    }
    return handler(res, req);
  };
}
