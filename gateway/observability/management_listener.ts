import { createHash, timingSafeEqual } from 'node:crypto';
import * as uWS from 'uWebSockets.js';
import { OAuthErrors } from '../../core/oauth_errors.js';
import { Exchange } from '../http/exchange.js';
import { withStrictFraming } from '../http/framing.js';
import { cannotListen, listenOnce } from '../http/listener.js';
import type { GatewayMetrics } from './metrics.js';
import { endpointPaths } from '../endpoints/endpoint_paths.js';

/** The management listener: where it listens, and the bearer token `/metrics` may require. */
export interface ManagementOptions {
  readonly host: string;
  readonly port: number;
  readonly token?: string | undefined;
  /** Routes served here besides /metrics and /healthz (the admin API, gateway/admin/). */
  readonly mount?: ((app: Pick<uWS.TemplatedApp, 'any'>) => void) | undefined;
}

export interface ManagementListener {
  /** e.g. http://127.0.0.1:9464 */
  readonly url: string;
  close(): void;
}

/**
 * `/metrics` (and `/healthz`) on a listener of their own, by default on 127.0.0.1: the public
 * port, which faces clients, then shows nothing of the gateway's internals (docs/operations.md,
 * "Metrics"; Keycloak's management interface does the same). Taken exclusively, always: a port
 * shared with another gateway would answer a scrape with either one's metrics. The processes of
 * `--processes N` each listen on a port of their own (management.port + index).
 */
export async function startManagementListener(metrics: GatewayMetrics, options: ManagementOptions): Promise<ManagementListener> {
  const app = uWS.App();
  const framed = withStrictFraming(app);
  registerMetricsRoute(framed, metrics, options.token);
  options.mount?.(framed);
  framed.any(endpointPaths.healthz, (res, req) => {
    new Exchange(res, req.getMethod()).sendStatic(200, 'application/json', '{"status":"ok"}', 'no-store');
  });
  framed.any('/*', (res, req) => {
    new Exchange(res, req.getMethod()).sendStatic(404, 'application/json', '{"error":"not_found"}', 'no-store');
  });
  const socket = await listenOnce(app, options.host, options.port, true);
  if (socket === false) {
    app.close();
    throw new Error(await cannotListen(options.host, options.port, 'management.host, management.port'));
  }
  const port = uWS.us_socket_local_port(socket as unknown as uWS.us_socket);
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    close() {
      uWS.us_listen_socket_close(socket);
      app.close();
    },
  };
}

/**
 * `GET /metrics` in the Prometheus text format; with `token`, only for `Authorization: Bearer
 * <token>` (RFC 6750 §2.1), compared in constant time.
 */
export function registerMetricsRoute(app: Pick<uWS.TemplatedApp, 'any'>, metrics: GatewayMetrics, token: string | undefined): void {
  const expected = token === undefined ? undefined : digest(`Bearer ${token}`);
  app.any(endpointPaths.metrics, (res, req) => {
    const method = req.getMethod();
    const exchange = new Exchange(res, method);
    if (method !== 'get' && method !== 'head') {
      exchange.sendError(OAuthErrors.getOnly, { allow: 'GET' });
      return;
    }
    if (expected !== undefined && !timingSafeEqual(digest(req.getHeader('authorization')), expected)) {
      // RFC 6750 §3: the challenge names the scheme.
      exchange.sendJson(401, '{"error":"invalid_token"}', { wwwAuthenticate: 'Bearer realm="metrics"' });
      return;
    }
    metrics.registry.metrics().then(
      (text) => exchange.sendStatic(200, metrics.registry.contentType, text, 'no-store'),
      () => exchange.sendStatic(500, 'text/plain', 'metrics unavailable', 'no-store'),
    );
  });
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
