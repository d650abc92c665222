import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { BearerErrors, DPoPErrors, type BearerErrorEntry } from '../../core/oauth_errors.js';
import type { FormParams, TokenTaskResult, UserInfoItem } from '../../wire/token_task.js';
import { maxBodyBytes, readBody, type BodyReceiver } from '../http/body_reader.js';
import type { CorsPolicy } from '../http/cors.js';
import { Exchange } from '../http/exchange.js';
import { isFormContentType } from '../http/form_request.js';
import { readDPoPHeader } from '../http/dpop_header.js';
import { parseForm } from '../http/form_parser.js';
import type { WorkerDispatcher } from '../dispatch/worker_dispatcher.js';
import { endpointPaths } from './endpoint_paths.js';

export const userInfoPath = endpointPaths.userinfo;

export interface UserInfoEndpointDeps {
  readonly dispatcher: WorkerDispatcher;
  readonly cors?: CorsPolicy | undefined;
}

// RFC 6750 §2.1: `Bearer` (case-insensitive, RFC 9110 §11.1), one space, a b64token; RFC 9449 §7.1
// the same with `DPoP`.
const bearerHeader = /^bearer +([A-Za-z0-9\-._~+/]+=*)$/i;
const dpopHeader = /^dpop +([A-Za-z0-9\-._~+/]+=*)$/i;

/**
 * The token of an `Authorization` header: absent, a Bearer token, a DPoP-bound token with the
 * `DPoP` header's proof ('' when none, `null` when repeated), or malformed.
 */
type HeaderToken =
  | { readonly kind: 'none' }
  | { readonly kind: 'bearer'; readonly token: string }
  | { readonly kind: 'dpop'; readonly token: string; readonly proof: string | null }
  | { readonly kind: 'malformed' };

function readHeaderToken(req: HttpRequest): HeaderToken {
  const authorization = req.getHeader('authorization');
  if (authorization.length === 0) return { kind: 'none' };
  const match = bearerHeader.exec(authorization);
  if (match !== null) return { kind: 'bearer', token: match[1] as string };
  const dpop = dpopHeader.exec(authorization);
  if (dpop !== null) return { kind: 'dpop', token: dpop[1] as string, proof: readDPoPHeader(req) };
  // Another scheme (Basic, say) is no bearer token at all; `Bearer` with a bad token is malformed.
  return /^(?:bearer|dpop)(?: |$)/i.test(authorization) ? { kind: 'malformed' } : { kind: 'none' };
}

// Worker answers are matched to their catalogue entry by body: the bodies are the catalogue's own.
const entryOfBody = new Map<string, BearerErrorEntry>(
  [...Object.values(BearerErrors), ...Object.values(DPoPErrors)].map((e) => [e.body, e]),
);

/**
 * `GET` and `POST /connect/userinfo` (OIDC Core §5.3): the access token as a Bearer header or, on
 * POST, as the form's `access_token` (RFC 6750 §2.1, §2.2; not both). A worker checks the token
 * and answers the claims; errors carry their `WWW-Authenticate` challenge (RFC 6750 §3).
 */
export function createUserInfoEndpoint(deps: UserInfoEndpointDeps): (res: HttpResponse, req: HttpRequest) => void {
  const { dispatcher, cors } = deps;

  const dispatch = (exchange: Exchange, token: string, dpop?: UserInfoItem['dpop']): void => {
    const params: FormParams = Object.create(null) as FormParams;
    params.access_token = token;
    let item: UserInfoItem = dpop === undefined ? { kind: 'userinfo', params } : { kind: 'userinfo', params, dpop };
    // RFC 8705 §3: the worker compares it with a certificate-bound token's `cnf.x5t#S256`.
    const x5t = exchange.clientCertificate()?.thumbprint;
    if (x5t !== undefined) item = { ...item, x5t };
    dispatcher.submit((result) => answer(exchange, result, dpop !== undefined), item);
  };

  return function userInfoEndpoint(res, req) {
    const method = req.getMethod();
    const exchange = new Exchange(res, method);
    if (cors !== undefined && cors.answerPreflightOrMark(exchange, req, method, 'GET, POST')) return;
    if (method !== 'get' && method !== 'post') {
      sendBearerError(exchange, BearerErrors.methodNotAllowed, 'GET, POST');
      return;
    }
    const header = readHeaderToken(req);
    if (header.kind === 'malformed') {
      sendBearerError(exchange, BearerErrors.malformed);
      return;
    }
    // RFC 9449 §4.3 check 1: not more than one proof.
    if (header.kind === 'dpop' && header.proof === null) {
      sendBearerError(exchange, DPoPErrors.proofInvalid);
      return;
    }
    if (method === 'post' && isFormContentType(req.getHeader('content-type'))) {
      readBody(exchange, maxBodyBytes, new UserInfoForm(exchange, header, method, dispatch));
      return;
    }
    if (method === 'post' && Number(req.getHeader('content-length') || '0') > 0) {
      // A body that is not a form cannot carry the token (RFC 6750 §2.2).
      sendBearerError(exchange, BearerErrors.malformed, undefined, true);
      return;
    }
    if (header.kind === 'none') sendBearerError(exchange, BearerErrors.noToken);
    else dispatchHeaderToken(exchange, header, method, dispatch);
  };
}

/** A POSTed form whose body is still arriving. */
class UserInfoForm implements BodyReceiver {
  constructor(
    private readonly exchange: Exchange,
    private readonly header: HeaderToken,
    private readonly method: string,
    private readonly dispatch: (exchange: Exchange, token: string, dpop?: UserInfoItem['dpop']) => void,
  ) {}

  onBody(body: Uint8Array): void {
    const parsed = parseForm(body);
    if (!parsed.ok) {
      sendBearerError(this.exchange, BearerErrors.malformed);
      return;
    }
    const fromForm = parsed.params.access_token;
    const header = this.header;
    if (fromForm !== undefined && (header.kind === 'bearer' || header.kind === 'dpop'))
      sendBearerError(this.exchange, BearerErrors.twoMethods);
    else if (fromForm !== undefined) this.dispatch(this.exchange, fromForm);
    else if (header.kind === 'bearer' || header.kind === 'dpop') dispatchHeaderToken(this.exchange, header, this.method, this.dispatch);
    else sendBearerError(this.exchange, BearerErrors.noToken);
  }

  onTooLarge(): void {
    sendBearerError(this.exchange, BearerErrors.malformed, undefined, true);
  }
}

/** A token from the `Authorization` header: a DPoP one goes with its proof and the method it must name. */
function dispatchHeaderToken(
  exchange: Exchange,
  header: Extract<HeaderToken, { kind: 'bearer' | 'dpop' }>,
  method: string,
  dispatch: (exchange: Exchange, token: string, dpop?: UserInfoItem['dpop']) => void,
): void {
  if (header.kind === 'bearer') dispatch(exchange, header.token);
  else dispatch(exchange, header.token, { proof: header.proof ?? '', htm: method === 'post' ? 'POST' : 'GET' });
}

function answer(exchange: Exchange, [status, body, retryAfter, error]: TokenTaskResult, dpopScheme: boolean): void {
  if (status === 200) {
    exchange.sendJson(200, body);
    return;
  }
  // A request that used the DPoP scheme gets DPoP challenges (RFC 9449 §7.1).
  const entry = entryOfBody.get(body);
  const challenge = dpopScheme ? entry?.dpopWwwAuthenticate : entry?.wwwAuthenticate;
  exchange.sendJson(status, body, { retryAfter: retryAfter ?? undefined, wwwAuthenticate: challenge }, error ?? undefined);
}

function sendBearerError(exchange: Exchange, error: BearerErrorEntry, allow?: string, closeConnection?: boolean): void {
  exchange.sendJson(error.status, error.body, { wwwAuthenticate: error.wwwAuthenticate, allow, closeConnection }, error.error);
}
