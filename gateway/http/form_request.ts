import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { OAuthErrors, type OAuthErrorEntry } from '../../core/oauth_errors.js';
import type { FormParams } from '../../wire/token_task.js';
import { maxBodyBytes, readBody, type BodyReceiver } from './body_reader.js';
import type { SpanStarter } from '../observability/tracing/request_tracing.js';
import type { CorsPolicy } from './cors.js';
import { Exchange, type AnswerObserver } from './exchange.js';
import { parseForm, type FormParseFailure } from './form_parser.js';
import { readDPoPHeader } from './dpop_header.js';

/** A parsed form POST, ready for the endpoint's own steps. */
export interface FormRequest {
  readonly exchange: Exchange;
  readonly params: FormParams;
  /** The Authorization header, copied before the uWS request object died ('' when absent). */
  readonly authorization: string;
  /** The DPoP header (gateway/http/dpop_header.ts): '' when absent, `null` when repeated. */
  readonly dpop: string | null;
}

/** What {@link readForm} needs to know of the endpoint it reads a form for. */
export interface FormRoute {
  /** The answer to any method but POST; it names the endpoint. */
  readonly postOnly: OAuthErrorEntry;
  /** Told about every answer (metrics, access log, audit events). */
  readonly observe?: AnswerObserver | undefined;
  /** Browser origins allowed to call the endpoint; `undefined` when no client lists one. */
  readonly cors?: CorsPolicy | undefined;
  /** Starts the request's trace span; `undefined` when tracing is off. */
  readonly begin?: SpanStarter | undefined;
}

/** An endpoint's own steps, run synchronously with the form {@link readForm} read. */
export type FormStep<R extends FormRoute> = (route: R, request: FormRequest) => void;

const parseFailures: Record<FormParseFailure, OAuthErrorEntry> = {
  encoding: OAuthErrors.formNotUtf8,
  duplicate: OAuthErrors.duplicateParameter,
  too_many: OAuthErrors.tooManyParameters,
};

/**
 * The first step of every OAuth form endpoint (token, introspection, revocation, device
 * authorization): POST only (RFC 6749 §3.2), the form content type, the 64 KiB body cap
 * (docs/endpoints.md), strict parsing (RFC 6749 Appendix B). Then `next` runs, synchronously,
 * with the parsed form. `route` and `next` are built once at start: a request allocates no
 * closure here beyond the body reader's own.
 */
export function readForm<R extends FormRoute>(route: R, res: HttpResponse, req: HttpRequest, next: FormStep<R>): void {
  const method = req.getMethod();
  const exchange = new Exchange(res, method);
  if (route.cors !== undefined && route.cors.answerPreflightOrMark(exchange, req, method, 'POST')) return;
  if (route.observe !== undefined) {
    exchange.observer = route.observe;
    exchange.startedAt = performance.now();
  }
  route.begin?.(exchange, req);
  if (method !== 'post') {
    exchange.sendError(route.postOnly, { allow: 'POST' });
    return;
  }
  // uWS request objects die with this callback: copy what later steps need now.
  const authorization = req.getHeader('authorization');
  const dpop = readDPoPHeader(req);
  if (!isFormContentType(req.getHeader('content-type'))) {
    exchange.sendError(OAuthErrors.notFormEncoded, { closeConnection: true });
    return;
  }
  const declaredLength = req.getHeader('content-length');
  if (declaredLength.length > 0 && Number(declaredLength) > maxBodyBytes) {
    exchange.sendError(OAuthErrors.bodyTooLarge, { closeConnection: true });
    return;
  }
  readBody(exchange, maxBodyBytes, new PendingForm(route, next, exchange, authorization, dpop));
}

/** A form whose body is still arriving: where the body goes once it is complete. */
class PendingForm<R extends FormRoute> implements BodyReceiver {
  constructor(
    private readonly route: R,
    private readonly next: FormStep<R>,
    private readonly exchange: Exchange,
    private readonly authorization: string,
    private readonly dpop: string | null,
  ) {}

  onBody(body: Uint8Array): void {
    const parsed = parseForm(body);
    if (!parsed.ok) this.exchange.sendError(parseFailures[parsed.reason]);
    else this.next(this.route, { exchange: this.exchange, params: parsed.params, authorization: this.authorization, dpop: this.dpop });
  }

  onTooLarge(): void {
    this.exchange.sendError(OAuthErrors.bodyTooLarge, { closeConnection: true });
  }
}

/**
 * Answers `missing` and returns `undefined` when the form lacks `name` (RFC 6749 §5.2
 * `invalid_request`: a required parameter is missing).
 */
export function requireParameter(request: FormRequest, name: string, missing: OAuthErrorEntry): string | undefined {
  const value = request.params[name];
  if (value === undefined) request.exchange.sendError(missing);
  return value;
}

/** `application/x-www-form-urlencoded`, optionally with a UTF-8 charset parameter. */
export function isFormContentType(header: string): boolean {
  const semi = header.indexOf(';');
  const type = (semi === -1 ? header : header.slice(0, semi)).trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') return false;
  if (semi === -1) return true;
  for (const part of header.slice(semi + 1).split(';')) {
    const [name, value] = part.split('=');
    if (name?.trim().toLowerCase() === 'charset' && value?.trim().replaceAll('"', '').toLowerCase() !== 'utf-8') return false;
  }
  return true;
}
