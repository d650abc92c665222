import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span, type TextMapGetter, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { HttpRequest } from 'uWebSockets.js';
import type { Exchange } from '../../http/exchange.js';

/** Starts the span of one endpoint's request, made once per endpoint. */
export type SpanStarter = (exchange: Exchange, req: HttpRequest) => void;

const propagator = new W3CTraceContextPropagator();
const headerGetter: TextMapGetter<Record<string, string>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

/**
 * Trace spans of the OAuth form endpoints (docs/operations.md, "Tracing"): one server span per
 * request, a child continuing the caller's `traceparent` (W3C Trace Context), with the endpoint,
 * grant type, client, status and outcome; under it the request's time in a worker thread and,
 * under that, its store commands. Workers do not export: they send back when they ran the
 * request and its store commands (wire/task_facts.ts), and the spans are made here
 * with those times, so one thread exports and the thread boundary costs a few numbers.
 * Never a token, a code or a secret in an attribute.
 */
export class RequestTracing {
  constructor(
    private readonly tracer: Tracer,
    private readonly closeProvider: () => Promise<void>,
  ) {}

  starter(path: string): SpanStarter {
    const name = `POST ${path}`;
    return (exchange, req) => {
      const traceparent = req.getHeader('traceparent');
      const parent =
        traceparent.length === 0
          ? ROOT_CONTEXT
          : propagator.extract(ROOT_CONTEXT, { traceparent, tracestate: req.getHeader('tracestate') }, headerGetter);
      exchange.span = this.tracer.startSpan(
        name,
        { kind: SpanKind.SERVER, attributes: { 'http.request.method': 'POST', 'url.path': path } },
        parent,
      );
    };
  }

  /** Ends the request's span as it is answered: its outcome and its worker and store children. */
  finish(exchange: Exchange, status: number, error: string | undefined): void {
    const span = exchange.span;
    if (span === undefined) return;
    exchange.span = undefined;
    span.setAttribute('http.response.status_code', status);
    span.setAttribute('tessera.outcome', status < 400 ? 'success' : 'failure');
    if (exchange.grantType !== undefined) span.setAttribute('tessera.grant_type', exchange.grantType);
    if (exchange.clientId !== undefined) span.setAttribute('tessera.client_id', exchange.clientId);
    if (error !== undefined) span.setAttribute('tessera.error', error);
    const timing = exchange.facts?.timing;
    if (timing !== undefined) this.workerSpans(span, timing);
    // OpenTelemetry's HTTP conventions: a server span is an error for 5xx only; 4xx is the client's.
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }

  /** Flushes what is buffered and stops exporting. */
  close(): Promise<void> {
    return this.closeProvider();
  }

  private workerSpans(parent: Span, timing: NonNullable<NonNullable<Exchange['facts']>['timing']>): void {
    const worker = this.tracer.startSpan(
      'worker',
      { kind: SpanKind.INTERNAL, startTime: timing.start },
      trace.setSpan(ROOT_CONTEXT, parent),
    );
    const inWorker = trace.setSpan(ROOT_CONTEXT, worker);
    for (const [command, start, end, failed] of timing.store) {
      const store = this.tracer.startSpan(
        `store ${command}`,
        { kind: SpanKind.CLIENT, startTime: start, attributes: { 'db.system.name': 'redis', 'db.operation.name': command } },
        inWorker,
      );
      if (failed) store.setStatus({ code: SpanStatusCode.ERROR });
      store.end(end);
    }
    worker.end(timing.end);
  }
}
