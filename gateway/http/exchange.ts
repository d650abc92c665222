import type { Span } from '@opentelemetry/api';
import type { HttpResponse } from 'uWebSockets.js';
import type { ErrorCode, OAuthErrorEntry } from '../../core/oauth_errors.js';
import { servingNow, type ServingState } from './serving_state.js';
import { clientAddressOf } from './trusted_proxies.js';
import { clientCertificateOf, type PresentedCertificate } from './client_certificate.js';
import type { TaskFacts } from '../../wire/task_facts.js';

const statusLines: Record<number, string> = {
  200: '200 OK',
  204: '204 No Content',
  302: '302 Found',
  303: '303 See Other',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

export function statusLine(status: number): string {
  return statusLines[status] ?? `${status} Unknown`;
}

/**
 * Told about a JSON answer just before it is written: its status and, for an error, its OAuth
 * `error` code as the code that made the answer set it (metrics, access log, audit events, trace).
 */
export type AnswerObserver = (exchange: Exchange, status: number, error: ErrorCode | undefined) => void;

/** Extra headers some answers carry; kept as named fields so the hot path builds no arrays. */
export interface ResponseExtras {
  retryAfter?: number | undefined;
  wwwAuthenticate?: string | undefined;
  allow?: string | undefined;
  closeConnection?: boolean | undefined;
}

/**
 * Whitespace after a refusal's JSON body that makes it larger than uWS's 16 KiB cork buffer, so
 * that it is written at once (see {@link Exchange.refuseAndClose}); JSON allows trailing
 * whitespace (RFC 8259 §2).
 */
const flushPadding = ' '.repeat(16 * 1024 + 1);

/**
 * One HTTP exchange on the uWebSockets.js thread. uWS forbids touching `res` after the client
 * aborted and kills the process when a handler neither responds nor aborts, so every write goes
 * through here: at most one response, never after abort, always corked (writes made after an
 * await are otherwise sent as separate syscalls), and without content in answer to HEAD.
 */
export class Exchange {
  aborted = false;
  done = false;
  /** Told about the JSON answer just before it is written (metrics, access log, audit events). */
  observer: AnswerObserver | undefined = undefined;
  /** `performance.now()` when the request was read; set by routes with an observer. */
  startedAt = 0;
  /** The authenticated client (or the client id a failed authentication named). */
  clientId: string | undefined = undefined;
  /** The token request's grant type, once it is known to be a registered one. */
  grantType: string | undefined = undefined;
  /** Why client authentication refused the request, when it did. */
  authFailure: 'failed' | 'blocked' | 'multiple_methods' | 'malformed' | undefined = undefined;
  /** What the worker learned answering it (wire/task_facts.ts). */
  facts: TaskFacts | undefined = undefined;
  /** The request's trace span while it is open (gateway/observability/tracing/request_tracing.ts); only when tracing is on. */
  span: Span | undefined = undefined;
  /** The request's `Origin`, when CORS allows it (gateway/http/cors.ts): echoed on the answer. */
  allowOrigin: string | undefined = undefined;
  /**
   * The answer depends on the request's `Origin` (a CORS-enabled endpoint read it): every answer
   * then says `Vary: Origin`, with or without CORS headers (gateway/http/cors.ts).
   */
  varyOrigin = false;
  /**
   * A store-kept client's origin being looked up (gateway/http/cors.ts): an answer given
   * meanwhile is written once it is found, with the CORS headers it calls for.
   */
  corsLookup: Promise<void> | undefined = undefined;
  /** An answer given while {@link corsLookup} runs, not yet written. */
  private deferred = false;
  /** The DPoP server nonce this answer hands out (`DPoP-Nonce`, RFC 9449 §8), when the client needs one. */
  dpopNonce: string | undefined = undefined;
  /** The client's address once read ({@link remoteAddress}). */
  private address: string | undefined = undefined;
  /** The TLS client certificate once read ({@link clientCertificate}); `null` until then. */
  private certificate: PresentedCertificate | undefined | null = null;
  /** RFC 9110 §9.3.2: a HEAD answer has the headers GET would have, and no content. */
  private readonly head: boolean;
  /** The gateway serving it: counts it in flight, and says when answers close their connection. */
  private readonly serving: ServingState | undefined;

  /** Built synchronously in the route handler; `method` is what the handler read from `req`. */
  constructor(
    readonly res: HttpResponse,
    method: string,
  ) {
    this.head = method === 'head';
    this.serving = servingNow();
    this.serving?.begin();
    // Must be attached before any asynchronous step (uWS contract).
    res.onAborted(() => {
      this.aborted = true;
      if (!this.done || this.deferred) this.serving?.end();
    });
  }

  /**
   * The client's address as text, for throttles, security logs and events; read only when needed.
   * The peer's own address, or the one forwarded by a trusted proxy (config `trustedProxies`,
   * gateway/http/trusted_proxies.ts).
   */
  remoteAddress(): string {
    // Read once per request: the throttles, the access line and the audit events may each ask, and
    // each read of the peer is a getpeername(2) system call in uSockets and a new ArrayBuffer.
    this.address ??= clientAddressOf(this.res);
    return this.address;
  }

  /**
   * The request's TLS client certificate (RFC 8705), from the own listener or a trusted proxy's
   * header (gateway/http/client_certificate.ts); read only when a step needs it.
   */
  clientCertificate(): PresentedCertificate | undefined {
    if (this.certificate === null) this.certificate = this.aborted ? undefined : clientCertificateOf(this.res);
    return this.certificate;
  }

  get open(): boolean {
    return !this.aborted && !this.done;
  }

  /**
   * JSON answer with the token endpoint's no-cache headers (RFC 6749 §5.1); `error` is the body's
   * OAuth error code, for the observer, when the answer is an error.
   */
  sendJson(status: number, body: string, extras?: ResponseExtras, error?: ErrorCode): void {
    // An answer that closes the connection never waits: nothing more of it may be read meanwhile
    // (refuseAndClose); it goes without CORS headers.
    if (this.corsLookup !== undefined && extras?.closeConnection !== true) {
      const lookup = this.corsLookup;
      if (this.defer()) void lookup.then(() => this.resume() && this.writeJson(status, body, extras, error));
      return;
    }
    if (!this.answering()) return;
    this.writeJson(status, body, extras, error);
  }

  private writeJson(status: number, body: string, extras?: ResponseExtras, error?: ErrorCode): void {
    this.observer?.(this, status, error);
    const res = this.res;
    res.cork(() => {
      res.writeStatus(statusLine(status));
      // An empty answer (revocation, RFC 7009 §2.2) has no body to type.
      if (body.length > 0) res.writeHeader('Content-Type', 'application/json; charset=utf-8');
      res.writeHeader('Cache-Control', 'no-store');
      res.writeHeader('Pragma', 'no-cache');
      if (this.varyOrigin) this.writeCors();
      if (this.dpopNonce !== undefined) res.writeHeader('DPoP-Nonce', this.dpopNonce);
      if (extras !== undefined) {
        if (extras.retryAfter !== undefined) res.writeHeader('Retry-After', String(extras.retryAfter));
        if (extras.wwwAuthenticate !== undefined) res.writeHeader('WWW-Authenticate', extras.wwwAuthenticate);
        if (extras.allow !== undefined) res.writeHeader('Allow', extras.allow);
      }
      this.endWith(body, extras?.closeConnection === true);
    });
  }

  /** An OAuth error response from the catalogue, with its status and prebuilt body. */
  sendError(error: OAuthErrorEntry, extras?: ResponseExtras): void {
    this.sendJson(error.status, error.body, extras, error.error);
  }

  /**
   * An HTML page or a redirect from the login and consent pages, with the security headers of
   * docs/endpoints.md and any cookies to set.
   */
  sendPage(
    status: number,
    html: string,
    options: { location?: string; cookies?: readonly string[]; retryAfter?: number | undefined } = {},
  ): void {
    if (!this.answering()) return;
    const res = this.res;
    res.cork(() => {
      res.writeStatus(statusLine(status));
      if (options.location !== undefined) res.writeHeader('Location', options.location);
      if (options.retryAfter !== undefined) res.writeHeader('Retry-After', String(options.retryAfter));
      if (html.length > 0) res.writeHeader('Content-Type', 'text/html; charset=utf-8');
      res.writeHeader('Cache-Control', 'no-store');
      res.writeHeader('Pragma', 'no-cache');
      res.writeHeader('X-Frame-Options', 'DENY');
      // same-origin, not no-referrer: nothing leaks to other sites (the client's redirect URI
      // included), and the pages' own form posts carry a real Origin, which the CSRF check needs
      // (under no-referrer a browser sends `Origin: null`, as an attacker's page can too).
      res.writeHeader('Referrer-Policy', 'same-origin');
      res.writeHeader('X-Content-Type-Options', 'nosniff');
      res.writeHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'");
      for (const cookie of options.cookies ?? []) res.writeHeader('Set-Cookie', cookie);
      this.endWith(html, false);
    });
  }

  /** A prebuilt body with its own headers (discovery, JWKS, metrics). */
  sendStatic(status: number, contentType: string, body: string | Uint8Array, cacheControl: string): void {
    if (this.corsLookup !== undefined) {
      const lookup = this.corsLookup;
      if (this.defer()) void lookup.then(() => this.resume() && this.writeStatic(status, contentType, body, cacheControl));
      return;
    }
    if (!this.answering()) return;
    this.writeStatic(status, contentType, body, cacheControl);
  }

  private writeStatic(status: number, contentType: string, body: string | Uint8Array, cacheControl: string): void {
    const res = this.res;
    res.cork(() => {
      res.writeStatus(statusLine(status));
      res.writeHeader('Content-Type', contentType);
      res.writeHeader('Cache-Control', cacheControl);
      if (this.varyOrigin) this.writeCors();
      this.endWith(body, false);
    });
  }

  /**
   * A CORS preflight's answer (Fetch standard, "CORS protocol"): `allowOrigin` and the endpoint's
   * methods when the origin is allowed; the headers a browser client sends beyond the safelisted
   * ones are `Authorization` (Basic, Bearer) and `DPoP`; the answer may be cached ten minutes.
   */
  sendPreflight(status: 204 | 403, allowOrigin: string | undefined, methods: string): void {
    if (!this.answering()) return;
    const res = this.res;
    res.cork(() => {
      res.writeStatus(statusLine(status));
      res.writeHeader('Vary', 'Origin');
      if (allowOrigin !== undefined) {
        res.writeHeader('Access-Control-Allow-Origin', allowOrigin);
        res.writeHeader('Access-Control-Allow-Methods', methods);
        res.writeHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type, DPoP');
        res.writeHeader('Access-Control-Max-Age', '600');
      }
      res.endWithoutBody(0, this.closing);
    });
  }

  /**
   * Marks the one answer as given, to be written when {@link corsLookup} ends; false when one was
   * given already or the client went away. The gateway counts it in flight until written.
   */
  private defer(): boolean {
    if (this.aborted || this.done) return false;
    this.done = true;
    this.deferred = true;
    return true;
  }

  /** The deferred answer may be written now: false when the client went away meanwhile. */
  private resume(): boolean {
    this.deferred = false;
    if (this.aborted) return false;
    this.serving?.end();
    return true;
  }

  /** Marks the one answer as given; false when one was given already or the client went away. */
  private answering(): boolean {
    if (this.aborted || this.done) return false;
    this.done = true;
    // Within the cork that writes it: the stop's wait ends on a later turn, after the write.
    this.serving?.end();
    return true;
  }

  /**
   * While the gateway drains every answer closes its connection, so that keep-alive clients take
   * their next request elsewhere (docs/operations.md, "Signals and shutdown").
   */
  private get closing(): boolean {
    return this.serving?.draining === true;
  }

  private writeCors(): void {
    // A cache must not give one origin's answer to another, nor an answer without CORS headers
    // (to a request without Origin, or from another origin) to an allowed origin: so on every
    // answer of the endpoint, not only those that allow (Fetch standard, "CORS protocol and HTTP
    // caches"). Discovery and JWKS are `public, max-age`: a shared cache keeps them.
    this.res.writeHeader('Vary', 'Origin');
    if (this.allowOrigin === undefined) return;
    this.res.writeHeader('Access-Control-Allow-Origin', this.allowOrigin);
    // Retry-After and WWW-Authenticate are not safelisted response headers: a page reads them only when exposed.
    this.res.writeHeader('Access-Control-Expose-Headers', 'Retry-After, WWW-Authenticate, DPoP-Nonce');
  }

  /**
   * Answers `error` and closes the connection before anything else sent on it is read: for a
   * request whose framing leaves the start of the next request in doubt (RFC 9112 §6.3, §11.2).
   * uWS keeps parsing, and routing, the requests that follow in the same read even after an
   * answer that closes the connection, and holds answers in its 16 KiB cork buffer until that
   * parse ends. A body larger than that buffer is written at once; the answer is then complete,
   * and uWS shuts the socket down before it parses the next request. Sent with its body even to
   * HEAD: the connection closes after it, so no client reads it as the next response.
   */
  refuseAndClose(error: OAuthErrorEntry): void {
    this.sendJson(error.status, error.body + flushPadding, { closeConnection: true }, error.error);
  }

  private endWith(body: string | Uint8Array, closeConnection: boolean): void {
    const close = closeConnection || this.closing;
    // An answer that closes the connection goes whole, even to HEAD: nothing is read after it.
    if (!this.head || close) {
      this.res.end(body, close);
      return;
    }
    // uWS's end() would send the body, and endWithoutBody(length) leaves the response pending in
    // this uWS version (the connection then hangs until its timeout): the length is written here.
    const length = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
    this.res.writeHeader('Content-Length', String(length));
    this.res.endWithoutBody();
  }
}
