import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { errorBody } from '../workers/protocol/oauth_errors.js';
import type { ClientAuthenticator } from './client_auth.js';
import type { ClientAuthThrottle } from './client_auth_throttle.js';
import { maxBodyBytes, readBody } from './http/body_reader.js';
import { Exchange } from './http/exchange.js';
import { parseForm, type FormParseFailure } from './http/form_parser.js';
import type { WorkerDispatcher } from './worker_dispatcher.js';

export interface TokenEndpointDeps {
  issuer: string;
  authenticator: ClientAuthenticator;
  throttle: ClientAuthThrottle;
  /** Read per request so that grant registration can change at run time. */
  grantTypes: () => ReadonlySet<string>;
  dispatcher: WorkerDispatcher;
  /** Told the status of every answer. */
  observe?: (status: number) => void;
}

// Fixed public descriptions (SPEC §4): never input echoed back, never internal detail.
const bodies = {
  method: errorBody('invalid_request', 'The token endpoint accepts POST only.'),
  contentType: errorBody('invalid_request', 'The request must be application/x-www-form-urlencoded.'),
  tooLarge: errorBody('invalid_request', 'The request body is too large.'),
  encoding: errorBody('invalid_request', 'The request body is not valid form-urlencoded UTF-8.'),
  duplicate: errorBody('invalid_request', 'A parameter was sent more than once.'),
  tooMany: errorBody('invalid_request', 'The request has too many parameters.'),
  multipleMethods: errorBody('invalid_request', 'The request uses more than one client authentication method.'),
  invalidClient: errorBody('invalid_client', 'Client authentication failed.'),
  missingGrantType: errorBody('invalid_request', 'The grant_type parameter is missing.'),
  unsupportedGrantType: errorBody('unsupported_grant_type', 'The grant type is not supported.'),
  unauthorizedClient: errorBody('unauthorized_client', 'The client is not allowed to use this grant type.'),
  tooManyFailures: errorBody('temporarily_unavailable', 'Too many failed attempts. Retry later.'),
} as const;

const parseFailureBodies: Record<FormParseFailure, string> = {
  encoding: bodies.encoding,
  duplicate: bodies.duplicate,
  too_many: bodies.tooMany,
};

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

/**
 * `POST /connect/token` (RFC 6749 §3.2), as a list of the protocol's steps: method, content
 * type, body, parameters, client authentication, grant type supported and allowed; then the
 * grant itself runs in a worker.
 */
export function createTokenEndpoint(deps: TokenEndpointDeps): (res: HttpResponse, req: HttpRequest) => void {
  const basicChallenge = `Basic realm="${deps.issuer}"`;

  const onBody = (exchange: Exchange, body: Uint8Array, authorization: string): void => {
    const parsed = parseForm(body);
    if (!parsed.ok) {
      exchange.sendJson(400, parseFailureBodies[parsed.reason]);
      return;
    }
    const params = parsed.params;

    const auth = deps.authenticator.authenticate(authorization, params);
    // A blocked client is refused even with the right secret, or the block would limit nothing.
    const throttled = deps.throttle.stateOf(auth.ok ? auth.client.clientId : auth.clientId);
    if (throttled.blocked) {
      exchange.sendJson(429, bodies.tooManyFailures, { retryAfter: throttled.retryAfterSeconds });
      return;
    }
    if (!auth.ok) {
      deps.throttle.recordFailure(auth.clientId);
      if (auth.failure === 'multiple_methods') exchange.sendJson(400, bodies.multipleMethods);
      // RFC 6749 §5.2: 401 with a challenge when the client used the Authorization header.
      else exchange.sendJson(401, bodies.invalidClient, auth.usedAuthorizationHeader ? { wwwAuthenticate: basicChallenge } : undefined);
      return;
    }

    const grantType = params.grant_type;
    if (grantType === undefined) {
      exchange.sendJson(400, bodies.missingGrantType);
      return;
    }
    if (!deps.grantTypes().has(grantType)) {
      exchange.sendJson(400, bodies.unsupportedGrantType);
      return;
    }
    if (!auth.client.grantTypes.has(grantType)) {
      exchange.sendJson(400, bodies.unauthorizedClient);
      return;
    }
    // Secrets stay on this thread.
    delete params.client_secret;
    deps.dispatcher.submit(exchange, [grantType, auth.client.clientId, params]);
  };

  const observe = deps.observe;
  return (res, req) => {
    const exchange = new Exchange(res);
    exchange.observer = observe;
    if (req.getMethod() !== 'post') {
      exchange.sendJson(405, bodies.method, { allow: 'POST' });
      return;
    }
    // uWS request objects die with this callback: copy what later steps need now.
    const authorization = req.getHeader('authorization');
    if (!isFormContentType(req.getHeader('content-type'))) {
      exchange.sendJson(400, bodies.contentType, { closeConnection: true });
      return;
    }
    const declaredLength = req.getHeader('content-length');
    if (declaredLength.length > 0 && Number(declaredLength) > maxBodyBytes) {
      exchange.sendJson(413, bodies.tooLarge, { closeConnection: true });
      return;
    }
    readBody(
      exchange,
      maxBodyBytes,
      (body) => onBody(exchange, body, authorization),
      () => exchange.sendJson(413, bodies.tooLarge, { closeConnection: true }),
    );
  };
}
