/**
 * The pages while the page secret has not come from the store yet (docs/operations.md, "Starting
 * without the store"): their cookies and CSRF tokens are signed with it, so none is served
 * without it. The same routes are registered (a route set keeps its routes when the secret
 * arrives and the routes are built again), each answering `503` with `Retry-After`.
 */
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { Exchange } from '../http/exchange.js';
import { renderPage } from './templates.js';

const routeRegistrations = new Set<PropertyKey>(['any', 'get', 'post', 'put', 'del', 'patch', 'options', 'head', 'connect', 'trace']);

// The secret is read from the store about once a second while the store answers again.
const retryAfterSeconds = 1;

/** `app`, but every route registered through it answers 503 instead of its handler. */
export function pagesUnavailable(app: TemplatedApp): TemplatedApp {
  const refusing: TemplatedApp = new Proxy(app, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property);
      if (typeof value !== 'function' || !routeRegistrations.has(property)) return value;
      return (pattern: string) => {
        value.call(target, pattern, answerUnavailable);
        return refusing;
      };
    },
  });
  return refusing;
}

function answerUnavailable(res: HttpResponse, req: HttpRequest): void {
  new Exchange(res, req.getMethod()).sendPage(
    503,
    renderPage('error', 'Temporarily unavailable', { message: 'Sign-in is temporarily unavailable. Try again in a moment.' }),
    { retryAfter: retryAfterSeconds },
  );
}
