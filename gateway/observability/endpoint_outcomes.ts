import type { Logger } from 'pino';
import type { AuditEvents } from './events/audit_events.js';
import type { AnswerObserver } from '../http/exchange.js';
import type { GatewayMetrics, MetricsEndpoint } from './metrics.js';
import { writeAccessLine, wantsAccessLine } from './outcomes/access_log.js';
import { outcomePaths, type AnsweredRequest } from './outcomes/answered_request.js';
import { emitOutcomeEvents } from './outcomes/outcome_events.js';
import { recordOutcomeMetrics } from './outcomes/outcome_metrics.js';
import { finishSpan, spanStarterFor } from './outcomes/outcome_tracing.js';
import type { StoreOutageLog } from './store_outage_log.js';
import type { RequestTracing, SpanStarter } from './tracing/request_tracing.js';

/** What each OAuth form endpoint does with its answers: one observer per endpoint, made once. */
export interface EndpointObservers {
  readonly token: AnswerObserver;
  readonly introspection: AnswerObserver;
  readonly revocation: AnswerObserver;
  readonly deviceAuthorization: AnswerObserver;
  readonly pushedAuthorization: AnswerObserver;
  /** Each endpoint's span starter; all `undefined` when tracing is off. */
  readonly begin: Readonly<
    Record<'token' | 'introspection' | 'revocation' | 'deviceAuthorization' | 'pushedAuthorization', SpanStarter | undefined>
  >;
}

export interface EndpointOutcomeDeps {
  readonly metrics: GatewayMetrics;
  readonly events: AuditEvents;
  readonly logger: Logger;
  readonly storeOutage: StoreOutageLog;
  /** Trace spans, when tracing is on (docs/operations.md, "Tracing"). */
  readonly tracing?: RequestTracing | undefined;
}

/**
 * Turns each answered request into its metrics, its access log line and its audit events
 * (docs/operations.md, "Metrics", "Logs", "Events"), and ends its span, on the gateway thread,
 * just before the answer is written; each concept is a file of gateway/observability/outcomes/. The address is
 * read only when a log line or an event needs it; nothing here ever sees a secret, a token or a
 * code, nor the answer body: an error's code comes with the answer.
 */
export function createEndpointObservers(deps: EndpointOutcomeDeps): EndpointObservers {
  const { tracing } = deps;
  return {
    token: recordOutcome('token', deps),
    introspection: recordOutcome('introspection', deps),
    revocation: recordOutcome('revocation', deps),
    deviceAuthorization: recordOutcome('device_authorization', deps),
    pushedAuthorization: recordOutcome('pushed_authorization', deps),
    begin: {
      token: spanStarterFor(tracing, 'token'),
      introspection: spanStarterFor(tracing, 'introspection'),
      revocation: spanStarterFor(tracing, 'revocation'),
      deviceAuthorization: spanStarterFor(tracing, 'device_authorization'),
      pushedAuthorization: spanStarterFor(tracing, 'pushed_authorization'),
    },
  };
}

/** One endpoint's outcome recorder: metrics, the span, then the log line and events when wanted. */
function recordOutcome(endpoint: MetricsEndpoint, deps: EndpointOutcomeDeps): AnswerObserver {
  const { metrics, events, logger, storeOutage, tracing } = deps;
  const path = outcomePaths[endpoint];
  // One line per token request and per pushed authorization request (a sign-in's first step).
  const eachRequest = endpoint === 'token' || endpoint === 'pushed_authorization';
  return (exchange, status, error) => {
    const durationSeconds = (performance.now() - exchange.startedAt) / 1000;
    recordOutcomeMetrics(metrics, storeOutage, endpoint, exchange, status, durationSeconds);
    finishSpan(tracing, exchange, status, error);
    const logLine = wantsAccessLine(logger, exchange, eachRequest);
    if (!logLine && !events.enabled) return;
    const answered: AnsweredRequest = {
      endpoint,
      path,
      status,
      error,
      remoteAddress: exchange.remoteAddress(),
      clientId: exchange.clientId,
      grantType: exchange.grantType,
      authFailure: exchange.authFailure,
      facts: exchange.facts,
    };
    if (logLine) writeAccessLine(logger, answered, durationSeconds);
    if (events.enabled) emitOutcomeEvents(events, answered);
  };
}
