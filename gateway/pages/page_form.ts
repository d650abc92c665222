import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { FormParams } from '../../wire/token_task.js';
import { maxBodyBytes, readBody } from '../http/body_reader.js';
import { Exchange } from '../http/exchange.js';
import { isFormContentType } from '../http/form_request.js';
import { parseForm } from '../http/form_parser.js';
import { renderPage } from './templates.js';

export interface PageRequest {
  readonly exchange: Exchange;
  readonly method: string;
  /** Query string of a GET, `''` otherwise. */
  readonly query: string;
  /** Parsed body of a POST, empty for a GET. */
  readonly form: FormParams;
  readonly cookies: string;
  /** The `Origin` header (`''` when absent): a form posted from another origin is refused. */
  readonly origin: string;
  /** The peer's address as text, for per-address throttles. */
  readonly remoteAddress: string;
}

export function errorPage(exchange: Exchange, status: number, message: string, title = 'Something went wrong'): void {
  // A 503 page says when to come back (RFC 9110 §10.2.3), as the API endpoints' 503s do: a store
  // that failed, or a client lookup refused at the registry's cap.
  exchange.sendPage(status, renderPage('error', title, { message }), status === 503 ? { retryAfter: 2 } : {});
}

/**
 * A browser-facing route: GET with a query, or a form POST, with errors shown as pages (not JSON)
 * and the same body limits and strict parsing as the token endpoint.
 */
export function createPageRoute(
  methods: readonly ('get' | 'post')[],
  handle: (request: PageRequest) => void,
): (res: HttpResponse, req: HttpRequest) => void {
  return (res, req) => {
    const method = req.getMethod();
    const exchange = new Exchange(res, method);
    const cookies = req.getHeader('cookie');
    const origin = req.getHeader('origin');
    const remoteAddress = exchange.remoteAddress();
    if (method === 'get' && methods.includes('get')) {
      handle({ exchange, method, query: req.getQuery() ?? '', form: Object.create(null) as FormParams, cookies, origin, remoteAddress });
      return;
    }
    if (method !== 'post' || !methods.includes('post')) {
      errorPage(exchange, 405, 'This page does not accept that kind of request.');
      return;
    }
    if (!isFormContentType(req.getHeader('content-type'))) {
      errorPage(exchange, 400, 'The form was not sent as a form.');
      return;
    }
    readBody(exchange, maxBodyBytes, {
      onBody(body) {
        const parsed = parseForm(body);
        if (!parsed.ok) errorPage(exchange, 400, 'The form could not be read.');
        else handle({ exchange, method, query: '', form: parsed.params, cookies, origin, remoteAddress });
      },
      onTooLarge() {
        errorPage(exchange, 413, 'The form is too large.');
      },
    });
  };
}
