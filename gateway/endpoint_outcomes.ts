import type { Logger } from 'pino';
import type { AuditEventName, AuditEventInput } from './events/audit_event.js';
import type { AuditEvents } from './events/audit_events.js';
import type { AnswerObserver } from './http/exchange.js';
import type { GatewayMetrics, MetricsEndpoint, ThrottleName } from './metrics.js';
import type { StoreOutageLog } from './store_outage_log.js';
import type { RequestTracing, SpanStarter } from './tracing/request_tracing.js';

/** What each OAuth form endpoint does with its answers: one observer per endpoint, made once. */
export interface EndpointObservers {
  readonly token: AnswerObserver;
  readonly introspection: AnswerObserver;
  readonly revocation: AnswerObserver;
  readonly deviceAuthorization: AnswerObserver;
  /** Each endpoint's span starter; all `undefined` when tracing is off. */
  readonly begin: Readonly<Record<'token' | 'introspection' | 'revocation' | 'deviceAuthorization', SpanStarter | undefined>>;
}

export interface EndpointOutcomeDeps {
  readonly metrics: GatewayMetrics;
  readonly events: AuditEvents;
  readonly logger: Logger;
  readonly storeOutage: StoreOutageLog;
  /** Trace spans, when tracing is on (docs/operations.md, "Tracing"). */
  readonly tracing?: RequestTracing | undefined;
}

const reuseEvents: Readonly<Record<string, AuditEventName>> = {
  refresh_token: 'RefreshTokenReuseDetected',
  authorization_code: 'AuthorizationCodeReuseDetected',
  device_code: 'AuthorizationCodeReuseDetected',
};

/** The path each endpoint's lines and events name. */
const paths: Readonly<Record<MetricsEndpoint, string>> = {
  token: '/connect/token',
  introspection: '/connect/introspect',
  revocation: '/connect/revocation',
  device_authorization: '/connect/deviceauthorization',
};

/** Which throttle a 429 of an endpoint came from, when client authentication did not refuse it. */
const endpointThrottles: Readonly<Record<MetricsEndpoint, ThrottleName>> = {
  token: 'password',
  introspection: 'introspection_inactive',
  revocation: 'client_authentication',
  device_authorization: 'device_authorization',
};

/**
 * Turns each answered request into its metrics, its access log line and its audit events
 * (docs/operations.md, "Metrics", "Logs", "Events"), on the gateway thread, just before the answer
 * is written. The address is read only when a log line or an event needs it; nothing here ever
 * sees a secret, a token or a code, nor the answer body: an error's code comes with the answer.
 */
export function createEndpointObservers(deps: EndpointOutcomeDeps): EndpointObservers {
  return {
    token: observerFor('token', deps),
    introspection: observerFor('introspection', deps),
    revocation: observerFor('revocation', deps),
    deviceAuthorization: observerFor('device_authorization', deps),
    begin: {
      token: deps.tracing?.starter(paths.token),
      introspection: deps.tracing?.starter(paths.introspection),
      revocation: deps.tracing?.starter(paths.revocation),
      deviceAuthorization: deps.tracing?.starter(paths.device_authorization),
    },
  };
}

function observerFor(endpoint: MetricsEndpoint, deps: EndpointOutcomeDeps): AnswerObserver {
  const { metrics, events, logger, storeOutage, tracing } = deps;
  const path = paths[endpoint];
  const isToken = endpoint === 'token';
  return (exchange, status, error) => {
    const durationSeconds = (performance.now() - exchange.startedAt) / 1000;
    const grantType = exchange.grantType ?? '';
    metrics.observeRequest(endpoint, grantType, status, durationSeconds);
    const facts = exchange.facts;
    if (status === 429)
      metrics.countThrottleHit(exchange.authFailure === 'blocked' ? 'client_authentication' : endpointThrottles[endpoint]);
    if (facts?.storeUnavailable === true) storeOutage.failed();
    if (facts?.reuse !== undefined) metrics.countReuse(facts.reuse);

    if (exchange.span !== undefined) tracing?.finish(exchange, status, error);

    const authFailed = exchange.authFailure !== undefined;
    // One line per token request and per refused client authentication, at info (docs/operations.md, "Logs").
    const logLine = (isToken || authFailed) && logger.isLevelEnabled('info');
    if (!logLine && !events.enabled) return;
    const remoteAddress = exchange.remoteAddress();
    const clientId = exchange.clientId;
    if (logLine) {
      logger.info(
        {
          endpoint: path,
          grantType: exchange.grantType,
          clientId,
          status,
          error,
          durationMs: Math.round(durationSeconds * 10_000) / 10,
          address: remoteAddress,
        },
        isToken ? 'token request' : 'request refused: client authentication',
      );
    }
    if (!events.enabled) return;
    // Each event written out in full, not spread from a shared object: one object per event.
    const grant = exchange.grantType;
    if (authFailed && exchange.authFailure !== 'blocked') {
      events.emit({
        name: 'ClientAuthenticationFailure',
        outcome: 'failure',
        clientId,
        grantType: grant,
        remoteAddress,
        endpoint: path,
        error,
      });
    }
    if (isToken) {
      const subject = facts?.subject;
      events.emit(
        status === 200
          ? {
              name: 'TokenIssuedSuccess',
              outcome: 'success',
              clientId,
              grantType: grant,
              remoteAddress,
              endpoint: path,
              subject,
              jti: facts?.jti,
            }
          : { name: 'TokenIssuedFailure', outcome: 'failure', clientId, grantType: grant, remoteAddress, endpoint: path, subject, error },
      );
    }
    if (facts === undefined) return;
    const common = { clientId, grantType: grant, remoteAddress, endpoint: path };
    if (facts.reuse !== undefined) {
      const reuse: AuditEventInput = {
        name: reuseEvents[facts.reuse] ?? 'RefreshTokenReuseDetected',
        outcome: 'failure',
        ...common,
        subject: facts.subject,
        error: 'invalid_grant',
        details: { item: facts.reuse, familyRevoked: true },
      };
      events.emit(reuse);
    }
    if (facts.login !== undefined) {
      events.emit({
        name: facts.login.success ? 'UserLoginSuccess' : 'UserLoginFailure',
        outcome: facts.login.success ? 'success' : 'failure',
        ...common,
        subject: facts.login.subject,
        username: facts.login.username,
        error: facts.login.reason,
      });
    }
    if (facts.revoked !== undefined && status === 200) {
      events.emit({
        name: 'TokenRevoked',
        outcome: 'success',
        ...common,
        subject: facts.subject,
        jti: facts.jti,
        details: { tokenType: facts.revoked },
      });
    }
  };
}
