import type { Exchange } from '../../http/exchange.js';
import type { MetricsEndpoint } from '../metrics.js';
import type { RequestTracing, SpanStarter } from '../tracing/request_tracing.js';
import { outcomePaths } from './answered_request.js';

/** Each endpoint's span starter (docs/operations.md, "Tracing"); `undefined` when tracing is off. */
export function spanStarterFor(tracing: RequestTracing | undefined, endpoint: MetricsEndpoint): SpanStarter | undefined {
  return tracing?.starter(outcomePaths[endpoint]);
}

/** Ends the request's span, when it has one, with its status and `error` code. */
export function finishSpan(tracing: RequestTracing | undefined, exchange: Exchange, status: number, error: string | undefined): void {
  if (exchange.span !== undefined) tracing?.finish(exchange, status, error);
}
