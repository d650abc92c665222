import type { Exchange } from '../../http/exchange.js';
import type { GatewayMetrics, MetricsEndpoint, ThrottleName } from '../metrics.js';
import type { StoreOutageLog } from '../store_outage_log.js';

/** Which throttle a 429 of an endpoint came from, when client authentication did not refuse it. */
const endpointThrottles: Readonly<Record<MetricsEndpoint, ThrottleName>> = {
  token: 'password',
  introspection: 'introspection_inactive',
  revocation: 'client_authentication',
  device_authorization: 'device_authorization',
  // RFC 9126: the pushed authorization request endpoint has no throttle of its own.
  pushed_authorization: 'client_authentication',
};

/**
 * An answered request's metrics (docs/operations.md, "Metrics"): its count and duration, the
 * throttle that refused it, a refresh token or code reuse; a store failure goes to the outage log.
 */
export function recordOutcomeMetrics(
  metrics: GatewayMetrics,
  storeOutage: StoreOutageLog,
  endpoint: MetricsEndpoint,
  exchange: Exchange,
  status: number,
  durationSeconds: number,
): void {
  metrics.observeRequest(endpoint, exchange.grantType ?? '', status, durationSeconds);
  const facts = exchange.facts;
  if (status === 429) metrics.countThrottleHit(exchange.authFailure === 'blocked' ? 'client_authentication' : endpointThrottles[endpoint]);
  if (facts?.storeUnavailable === true) storeOutage.failed();
  if (facts?.reuse !== undefined) metrics.countReuse(facts.reuse);
}
