import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { serveWith, type ServingState } from './serving_state.js';
import type { ClientCertificates } from './client_certificate.js';
import { captureForwarding, type TrustedProxies } from './trusted_proxies.js';

type RouteHandler = (res: HttpResponse, req: HttpRequest) => void | Promise<void>;

/** One generation of routes, built from one config. */
export interface RouteSet {
  /** `method pattern`, in registration order (uWS matches in its own order, by pattern). */
  readonly keys: readonly string[];
  readonly handlers: readonly RouteHandler[];
  readonly proxies: TrustedProxies;
  /** Where the requests' TLS client certificates come from (RFC 8705); `undefined`: nowhere. */
  readonly certificates?: ClientCertificates | undefined;
}

/** The uWS methods that register a route handler. */
const routeMethods = ['any', 'get', 'post', 'put', 'del', 'patch', 'options', 'head', 'connect', 'trace'] as const;

/**
 * Records the routes that `register` makes, on a stand-in for the uWS app: uWS cannot remove a
 * route, so the real app gets one entry per route that calls the current set's handler, and a
 * config reload builds a new set and swaps it in (docs/operations.md, "Reload").
 */
export function recordRoutes(register: (app: TemplatedApp) => void, proxies: TrustedProxies, certificates?: ClientCertificates): RouteSet {
  const keys: string[] = [];
  const handlers: RouteHandler[] = [];
  const recorder: Record<string, unknown> = {};
  for (const method of routeMethods) {
    recorder[method] = (pattern: string, handler: RouteHandler) => {
      keys.push(`${method} ${pattern}`);
      handlers.push(handler);
      return recorder;
    };
  }
  register(recorder as unknown as TemplatedApp);
  return { keys, handlers, proxies, certificates: certificates?.active === true ? certificates : undefined };
}

/** The routes in service; mounted once per listening app (a TLS reload opens a new app). */
export class RouteTable {
  constructor(
    private current: RouteSet,
    /** The gateway's requests in flight and its drain, which every exchange reports to. */
    private readonly serving: ServingState,
  ) {}

  /** Registers every route of the current set on `app`, each calling whatever set is current. */
  mount(app: TemplatedApp): void {
    const { keys } = this.current;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as string;
      const space = key.indexOf(' ');
      const method = key.slice(0, space) as (typeof routeMethods)[number];
      app[method](key.slice(space + 1), (res, req) => {
        const set = this.current;
        captureForwarding(res, req, set.proxies);
        set.certificates?.capture(res, req);
        return serveWith(this.serving, set.handlers[i] as RouteHandler, res, req);
      });
    }
  }

  /**
   * Serves `next` from now on. A set with other routes than the mounted ones is refused (the
   * routes do not depend on the config today; a change that made them would need a restart).
   */
  replace(next: RouteSet): boolean {
    const { keys } = this.current;
    if (next.keys.length !== keys.length || next.keys.some((key, i) => key !== keys[i])) return false;
    this.current = next;
    return true;
  }
}
