import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { BearerErrors, type BearerErrorEntry } from '../workers/protocol/oauth_errors.js';
import type { FormParams, TokenTaskResult } from '../workers/protocol/token_task.js';
import { maxBodyBytes, readBody, type BodyReceiver } from './http/body_reader.js';
import type { CorsPolicy } from './http/cors.js';
import { Exchange } from './http/exchange.js';
import { isFormContentType } from './http/form_request.js';
import { parseForm } from './http/form_parser.js';
import type { WorkerDispatcher } from './worker_dispatcher.js';

export const userInfoPath = '/connect/userinfo';

export interface UserInfoEndpointDeps {
  readonly dispatcher: WorkerDispatcher;
  readonly cors?: CorsPolicy | undefined;
}

// RFC 6750 §2.1: `Bearer` (case-insensitive, RFC 9110 §11.1), one space, a b64token.
const bearerHeader = /^bearer +([A-Za-z0-9\-._~+/]+=*)$/i;

/** The token of an `Authorization` header: absent, a Bearer token, or malformed. */
type HeaderToken = { readonly kind: 'none' } | { readonly kind: 'bearer'; readonly token: string } | { readonly kind: 'malformed' };

function readHeaderToken(authorization: string): HeaderToken {
  if (authorization.length === 0) return { kind: 'none' };
  const match = bearerHeader.exec(authorization);
  if (match !== null) return { kind: 'bearer', token: match[1] as string };
  // Another scheme (Basic, say) is no bearer token at all; `Bearer` with a bad token is malformed.
  return /^bearer(?: |$)/i.test(authorization) ? { kind: 'malformed' } : { kind: 'none' };
}

// Worker answers are matched to their challenge by body: the bodies are the catalogue's own.
const challengeOfBody = new Map<string, BearerErrorEntry>(Object.values(BearerErrors).map((e) => [e.body, e]));

/**
 * `GET` and `POST /connect/userinfo` (OIDC Core §5.3): the access token as a Bearer header or, on
 * POST, as the form's `access_token` (RFC 6750 §2.1, §2.2; not both). A worker checks the token
 * and answers the claims; errors carry their `WWW-Authenticate` challenge (RFC 6750 §3).
 */
export function createUserInfoEndpoint(deps: UserInfoEndpointDeps): (res: HttpResponse, req: HttpRequest) => void {
  const { dispatcher, cors } = deps;

  const dispatch = (exchange: Exchange, token: string): void => {
    const params: FormParams = Object.create(null) as FormParams;
    params.access_token = token;
    dispatcher.submit((result) => answer(exchange, result), { kind: 'userinfo', params });
  };

  return function userInfoEndpoint(res, req) {
    const method = req.getMethod();
    const exchange = new Exchange(res, method);
    if (cors !== undefined) {
      if (method === 'options' && cors.answerPreflight(exchange, req, 'GET, POST')) return;
      cors.mark(exchange, req);
    }
    if (method !== 'get' && method !== 'post') {
      sendBearerError(exchange, BearerErrors.methodNotAllowed, 'GET, POST');
      return;
    }
    const header = readHeaderToken(req.getHeader('authorization'));
    if (header.kind === 'malformed') {
      sendBearerError(exchange, BearerErrors.malformed);
      return;
    }
    if (method === 'post' && isFormContentType(req.getHeader('content-type'))) {
      readBody(exchange, maxBodyBytes, new UserInfoForm(exchange, header, dispatch));
      return;
    }
    if (method === 'post' && Number(req.getHeader('content-length') || '0') > 0) {
      // A body that is not a form cannot carry the token (RFC 6750 §2.2).
      sendBearerError(exchange, BearerErrors.malformed, undefined, true);
      return;
    }
    if (header.kind === 'none') sendBearerError(exchange, BearerErrors.noToken);
    else dispatch(exchange, header.token);
  };
}

/** A POSTed form whose body is still arriving. */
class UserInfoForm implements BodyReceiver {
  constructor(
    private readonly exchange: Exchange,
    private readonly header: HeaderToken,
    private readonly dispatch: (exchange: Exchange, token: string) => void,
  ) {}

  onBody(body: Uint8Array): void {
    const parsed = parseForm(body);
    if (!parsed.ok) {
      sendBearerError(this.exchange, BearerErrors.malformed);
      return;
    }
    const fromForm = parsed.params.access_token;
    if (fromForm !== undefined && this.header.kind === 'bearer') sendBearerError(this.exchange, BearerErrors.twoMethods);
    else if (fromForm !== undefined) this.dispatch(this.exchange, fromForm);
    else if (this.header.kind === 'bearer') this.dispatch(this.exchange, this.header.token);
    else sendBearerError(this.exchange, BearerErrors.noToken);
  }

  onTooLarge(): void {
    sendBearerError(this.exchange, BearerErrors.malformed, undefined, true);
  }
}

function answer(exchange: Exchange, [status, body, retryAfter]: TokenTaskResult): void {
  if (status === 200) {
    exchange.sendJson(200, body);
    return;
  }
  const challenge = challengeOfBody.get(body);
  exchange.sendJson(status, body, {
    retryAfter: retryAfter ?? undefined,
    wwwAuthenticate: challenge?.wwwAuthenticate,
  });
}

function sendBearerError(exchange: Exchange, error: BearerErrorEntry, allow?: string, closeConnection?: boolean): void {
  exchange.sendJson(error.status, error.body, { wwwAuthenticate: error.wwwAuthenticate, allow, closeConnection });
}
