import { readFileSync } from 'node:fs';
import type { TemplatedApp } from 'uWebSockets.js';
import { registerAdminRoutes } from '../admin/admin_api.js';
import type { AuditEvents } from '../observability/events/audit_events.js';
import { Listener } from '../http/listener.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import { startManagementListener } from '../observability/management_listener.js';
import type { ValidatorReload } from '../validators/validator_reload.js';
import type { GatewayRoutes } from './build_routes.js';
import type { GatewayState } from './gateway_state.js';
import type { TokenTaskResult } from '../../wire/token_task.js';

/** Where the gateway listens. */
export interface Listening {
  readonly listener: Listener;
  readonly url: string;
  readonly port: number;
  /** `undefined` when the metrics are served on the public port. */
  readonly managementUrl: string | undefined;
}

/** Opens the management listener, then the public one with the routes mounted. */
export async function listen(state: GatewayState, metrics: GatewayMetrics, routes: GatewayRoutes, admin: AdminSources): Promise<Listening> {
  const { config, processSlot } = state;
  // Before the public listener: a management port that is taken fails the start with nothing
  // listening yet.
  if (!config.management.onPublicPort) {
    // With several processes each has its own: management.port + index (0 stays "any free port").
    const managementPort =
      config.management.port === 0 || processSlot === undefined ? config.management.port : config.management.port + processSlot.index;
    state.management = await startManagementListener(metrics, {
      ...config.management,
      port: managementPort,
      mount: adminRoutes(state, admin),
    });
  }
  // Only the processes of one `--processes N` share the port (SO_REUSEPORT, uWS's default); any
  // other gateway on it would silently take half the connections (docs/operations.md, "Several gateways").
  const listener = await Listener.open({
    host: config.listen.host,
    port: config.listen.port,
    exclusive: processSlot === undefined,
    tls: config.tls === undefined ? undefined : { ...config.tls, clientCaFile: config.mtls.caFile },
    mount: (app) => routes.table.mount(app),
  });
  state.listener = listener;
  const port = listener.port;
  const host = config.listen.host;
  const url = `${listener.secure ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return { listener, url, port, managementUrl: state.management?.url };
}

/** What the admin API needs besides the gateway's state. */
export interface AdminSources {
  readonly events: AuditEvents;
  readonly grantTypes: () => Iterable<string>;
  /** A worker's check of one of this issuer's access tokens (`admin.tokenScope`). */
  readonly checkAccessToken: (token: string) => Promise<TokenTaskResult>;
}

/**
 * The admin API's routes, when `admin.tokenFile` or `admin.tokenScope` is set (docs/operations.md,
 * "Admin API"): on the management listener only. The token is read once, here; a short one stops
 * the start.
 */
function adminRoutes(state: GatewayState, sources: AdminSources): ((app: Pick<TemplatedApp, 'any'>) => void) | undefined {
  const { config, clientRegistry, logger } = state;
  const { tokenFile, tokenScope } = config.admin;
  if ((tokenFile === undefined && tokenScope === undefined) || clientRegistry === undefined) return undefined;
  const token = tokenFile === undefined ? undefined : readFileSync(tokenFile, 'utf8').trim();
  if (token !== undefined && token.length < 32) throw new Error(`admin.tokenFile ${tokenFile}: the token must be at least 32 characters`);
  return (app) =>
    registerAdminRoutes(app, {
      registry: clientRegistry,
      apiResources: state.apiResources,
      config: () => state.config,
      grantTypes: sources.grantTypes,
      token,
      tokenScope: tokenScope === undefined ? undefined : { scope: tokenScope, check: sources.checkAccessToken },
      emit: (event) => sources.events.emit(event),
      logger: logger.child({ component: 'admin-api' }),
    });
}

/** The `tessera listening` line (docs/operations.md, "Running"). */
export function logListening(state: GatewayState, listening: Listening, validators: ValidatorReload): void {
  const { config, processSlot } = state;
  state.logger.info(
    {
      url: listening.url,
      issuer: config.issuer,
      threads: config.workers.threads,
      store: config.store.type,
      ...(processSlot === undefined ? {} : { processes: processSlot.count }),
      grantTypes: [...validators.grantTypes],
      metrics: `${listening.managementUrl ?? listening.url}/metrics`,
      events: { sink: config.events.sink, redisStream: config.events.redisStream?.key },
    },
    'tessera listening',
  );
}
