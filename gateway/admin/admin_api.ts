/**
 * The admin API (docs/operations.md, "Admin API"): store-kept clients created, read, updated,
 * disabled, deleted and listed, their secrets added and expired. Served on the management
 * listener only, never on the public port, and only to `Authorization: Bearer <admin token>` or
 * an access token of this issuer that grants `admin.tokenScope`.
 * Every change is an audit event (`Client*`, category `Configuration`).
 */
import { decodePathParameter } from '../http/path_parameter.js';
import { createHash, timingSafeEqual } from 'node:crypto';
import type * as uWS from 'uWebSockets.js';
import type { Logger } from 'pino';
import type { ClientConfig } from '../../core/worker_config.js';
import { isStoreUnavailable } from '../../core/store/store.js';
import type { ClientRegistry } from '../client_registry/client_registry.js';
import type { ConfigProblem } from '../config/config_error.js';
import type { LoadedConfig } from '../config/load.js';
import { readBody } from '../http/body_reader.js';
import type { TokenTaskResult } from '../../wire/token_task.js';
import { Exchange } from '../http/exchange.js';
import type { AuditEventInput, AuditEventName } from '../observability/events/audit_event.js';
import { checkClientDocument, clientView, generateSecret, secretId } from './client_document.js';
import { decodeClientCursor, encodeClientCursor } from './client_list_cursor.js';
import { withStoredApiResources, type ApiResourceRegistry } from '../client_registry/api_resource_registry.js';
import { registerApiResourceRoutes } from './api_resources_api.js';

export interface AdminApiDeps {
  readonly registry: ClientRegistry;
  /** Store-kept API resources (`/admin/api-resources`, gateway/admin/api_resources_api.ts). */
  readonly apiResources?: ApiResourceRegistry | undefined;
  /** The config in service (scopes, grant types a client is checked against). */
  readonly config: () => LoadedConfig;
  readonly grantTypes: () => Iterable<string>;
  /** The static admin token (docs/configuration.md, `admin.tokenFile`), when set. */
  readonly token: string | undefined;
  /**
   * `admin.tokenScope`, when set: the scope an access token must grant, and how a worker checks
   * one (an `access_token` task item).
   */
  readonly tokenScope?: { readonly scope: string; readonly check: (token: string) => Promise<TokenTaskResult> } | undefined;
  readonly emit: (event: AuditEventInput) => void;
  readonly logger: Logger;
}

export const adminPaths = {
  clients: '/admin/clients',
  client: '/admin/clients/:clientId',
  secrets: '/admin/clients/:clientId/secrets',
  expireSecret: '/admin/clients/:clientId/secrets/:secretId/expire',
} as const;

const maxAdminBody = 64 * 1024;
const defaultPageSize = 100;
const maxPageSize = 1000;

/** One admin request, copied out of uWS before anything asynchronous. */
export interface AdminRequest {
  readonly exchange: Exchange;
  readonly method: string;
  readonly clientId: string;
  readonly secretId: string;
  readonly query: (name: string) => string | undefined;
  /** The caller's address, read before anything asynchronous: every audit event carries it (docs/operations.md, "Events"). */
  readonly remoteAddress: string;
}

export type Handler = (request: AdminRequest, body: unknown, deps: AdminApiDeps) => Promise<void>;

/** Mounts the admin routes on the management app. */
export function registerAdminRoutes(app: Pick<uWS.TemplatedApp, 'any'>, deps: AdminApiDeps): void {
  const expected = deps.token === undefined ? undefined : digest(`Bearer ${deps.token}`);
  const route = (path: string, handlers: Readonly<Record<string, Handler>>): void => {
    app.any(path, (res, req) => {
      const method = req.getMethod();
      const exchange = new Exchange(res, method);
      const authorization = req.getHeader('authorization');
      const query = new URLSearchParams(req.getQuery() ?? '');
      const request: AdminRequest = {
        exchange,
        method,
        clientId: decodePathParameter(req.getParameter(0)),
        secretId: decodePathParameter(req.getParameter(1)),
        query: (name) => query.get(name) ?? undefined,
        remoteAddress: exchange.remoteAddress(),
      };
      const serve = (bytes: Uint8Array | undefined): void => {
        const handler = handlers[method];
        if (handler === undefined) {
          const allow = Object.keys(handlers)
            .map((m) => m.toUpperCase())
            .join(', ');
          exchange.sendJson(405, '{"error":"method_not_allowed"}', { allow });
          return;
        }
        const body = parseJsonBody(exchange, bytes);
        if (body === badJson) return;
        handler(request, body, deps).catch((err: unknown) => failed(deps, exchange, err));
      };
      if (expected !== undefined && timingSafeEqual(digest(authorization), expected)) {
        readBodyBytes(exchange, method, serve);
        return;
      }
      const bearer = deps.tokenScope === undefined ? undefined : bearerToken.exec(authorization)?.[1];
      if (deps.tokenScope === undefined || bearer === undefined || bearer.split('.').length !== 3) {
        unauthorized(exchange, authorization !== '');
        return;
      }
      // The body is read now (uWS hands it over only while this handler runs) and used once the
      // token has passed.
      const { scope, check } = deps.tokenScope;
      readBodyBytes(exchange, method, (borrowed) => {
        // uWS lends a one-chunk body only for this call: kept past the token check, it is copied.
        const bytes = borrowed === undefined ? undefined : Uint8Array.prototype.slice.call(borrowed);
        authorizeAccessToken(exchange, bearer, scope, check)
          .then((authorized) => {
            if (authorized) serve(bytes);
          })
          .catch((err: unknown) => failed(deps, exchange, err));
      });
    });
  };
  route(adminPaths.clients, { get: listClients, post: createClient });
  route(adminPaths.client, { get: showClient, patch: updateClient, delete: deleteClient });
  route(adminPaths.secrets, { post: addSecret });
  route(adminPaths.expireSecret, { post: expireSecret });
  if (deps.apiResources !== undefined) registerApiResourceRoutes(route);
}

/**
 * One page of the store-kept clients by `clientId`: `limit` (1-1000, default 100) from `cursor`
 * (the `next` of the page before) or after the client id `after`. A page reads about `limit`
 * records however many are stored; the walk's behaviour under concurrent writes is in
 * docs/operations.md ("Admin API").
 */
async function listClients(request: AdminRequest, _body: unknown, deps: AdminApiDeps): Promise<void> {
  const { exchange } = request;
  const limitText = request.query('limit');
  const limit = limitText === undefined ? defaultPageSize : /^\d{1,4}$/.test(limitText) ? Number(limitText) : Number.NaN;
  if (!(limit >= 1 && limit <= maxPageSize)) {
    return sendError(exchange, 400, 'invalid_request', `limit must be a whole number from 1 to ${maxPageSize}`);
  }
  const cursor = request.query('cursor');
  const afterId = request.query('after');
  if (cursor !== undefined && afterId !== undefined) return sendError(exchange, 400, 'invalid_request', 'give cursor or after, not both');
  const after = cursor === undefined ? afterId : decodeClientCursor(cursor);
  if (cursor !== undefined && after === undefined) {
    return sendError(exchange, 400, 'invalid_request', 'cursor is not one this API gave (the "next" of a page)');
  }
  const page = await deps.registry.list(after, limit);
  send(exchange, 200, { clients: page.clients.map((r) => clientView(r)), next: page.next === null ? null : encodeClientCursor(page.next) });
}

async function createClient(request: AdminRequest, body: unknown, deps: AdminApiDeps): Promise<void> {
  const { exchange } = request;
  if (!isObject(body)) return sendError(exchange, 400, 'invalid_client_metadata', 'the body must be a JSON object');
  const clientId = body.clientId;
  if (typeof clientId === 'string' && deps.config().clients.some((c) => c.clientId === clientId)) {
    return sendError(exchange, 409, 'conflict', 'a client of the config file has this clientId');
  }
  // A confidential client without a secret gets one, shown once in the answer; one that
  // authenticates with keys or a certificate needs none.
  const usesKeys = body.jwks !== undefined || body.jwksUri !== undefined || body.tokenEndpointAuthMethod !== undefined;
  const needsSecret = body.clientSecrets === undefined && body.requireClientSecret !== false && !usesKeys;
  const generated = needsSecret ? generateSecret() : undefined;
  const document = generated === undefined ? body : { ...body, clientSecrets: [generated.stored] };
  const checked = checkClientDocument(document, withStoredApiResources(deps.config(), deps.apiResources), deps.grantTypes());
  if (!checked.ok) return sendProblems(exchange, checked.problems);
  // One atomic write: a read first, then a write, let concurrent creations of one id all answer
  // 201, each with its own secret, and all but the last written secret never worked.
  const record = await deps.registry.add(checked.client);
  if (record === null) return sendError(exchange, 409, 'conflict', 'a store-kept client has this clientId');
  audit(deps, request, 'ClientCreated', checked.client.clientId);
  send(exchange, 201, { client: clientView(record), ...(generated === undefined ? {} : { secret: generated.secret }) });
}

async function showClient(request: AdminRequest, _body: unknown, deps: AdminApiDeps): Promise<void> {
  const configured = deps.config().clients.find((c) => c.clientId === request.clientId);
  if (configured !== undefined) {
    send(request.exchange, 200, { client: clientView({ config: configured as ClientConfig, createdAt: 0, updatedAt: 0 }, 'config') });
    return;
  }
  const record = await deps.registry.read(request.clientId);
  if (record === null) return notFound(request.exchange);
  send(request.exchange, 200, { client: clientView(record) });
}

/**
 * A JSON merge of the members given (RFC 7396, one level): `{"enabled": false}` disables the
 * client. `clientId` cannot change; secrets change through `/secrets`.
 */
async function updateClient(request: AdminRequest, body: unknown, deps: AdminApiDeps): Promise<void> {
  const { exchange } = request;
  if (!isObject(body)) return sendError(exchange, 400, 'invalid_client_metadata', 'the body must be a JSON object');
  const problems: ConfigProblem[] = [];
  if (body.clientId !== undefined && body.clientId !== request.clientId) problems.push({ path: 'clientId', message: 'cannot change' });
  if (body.clientSecrets !== undefined) problems.push({ path: 'clientSecrets', message: 'change secrets with /secrets' });
  if (problems.length > 0) return sendProblems(exchange, problems);
  const merge = (config: ClientConfig): Record<string, unknown> => {
    const merged: Record<string, unknown> = { ...config };
    for (const [name, value] of Object.entries(body)) {
      if (value === null) delete merged[name];
      else merged[name] = value;
    }
    return merged;
  };
  await saveChange(request, deps, merge, 'ClientUpdated', {}, 200);
}

async function deleteClient(request: AdminRequest, _body: unknown, deps: AdminApiDeps): Promise<void> {
  if (refusedAsConfigured(request, deps)) return;
  if (!(await deps.registry.remove(request.clientId))) return notFound(request.exchange);
  audit(deps, request, 'ClientDeleted', request.clientId);
  request.exchange.sendJson(204, '');
}

/** Roll-over, step one: a new secret beside the old ones (shown once). */
async function addSecret(request: AdminRequest, body: unknown, deps: AdminApiDeps): Promise<void> {
  const { exchange } = request;
  const options = body === undefined ? {} : body;
  if (!isObject(options)) return sendError(exchange, 400, 'invalid_request', 'the body must be a JSON object');
  const { description, expiration } = options;
  if (description !== undefined && typeof description !== 'string')
    return sendProblems(exchange, [{ path: 'description', message: 'must be a string' }]);
  if (expiration !== undefined && !isDate(expiration))
    return sendProblems(exchange, [{ path: 'expiration', message: 'must be an ISO 8601 date or date-time' }]);
  // Made once: a change tried again after a conflict adds the same secret to the client as it is then.
  const generated = generateSecret(description, expiration);
  const id = secretId(generated.stored);
  const add = (config: ClientConfig): Record<string, unknown> => ({
    ...config,
    clientSecrets: [...config.clientSecrets, generated.stored],
  });
  await saveChange(request, deps, add, 'ClientSecretAdded', { secretId: id }, 201, { secret: generated.secret, secretId: id });
}

/** Roll-over, step two: the old secret expires now, or at `expiration`. */
async function expireSecret(request: AdminRequest, body: unknown, deps: AdminApiDeps): Promise<void> {
  const { exchange } = request;
  const options = body === undefined ? {} : body;
  if (!isObject(options)) return sendError(exchange, 400, 'invalid_request', 'the body must be a JSON object');
  const expiration = options.expiration ?? new Date().toISOString();
  if (!isDate(expiration)) return sendProblems(exchange, [{ path: 'expiration', message: 'must be an ISO 8601 date or date-time' }]);
  const expire = (config: ClientConfig): Record<string, unknown> | typeof noSuchSecret => {
    if (!config.clientSecrets.some((s) => secretId(s) === request.secretId)) return noSuchSecret;
    return {
      ...config,
      clientSecrets: config.clientSecrets.map((s) => (secretId(s) === request.secretId ? { ...s, expiration } : s)),
    };
  };
  await saveChange(request, deps, expire, 'ClientSecretExpired', { secretId: request.secretId, expiration }, 200);
}

const noSuchSecret: unique symbol = Symbol('no such secret');

/**
 * Applies `edit` to the store-kept client the path names, checks the result as a new client is
 * checked, writes it and tells every gateway. The registry re-reads, re-applies and re-checks
 * when another change came first (docs/operations.md, "Admin API": concurrent changes are all
 * kept; a deleted client stays deleted and answers 404); `409 conflict` only when the client
 * kept changing through every try. A registered client keeps its registration (RFC 7592).
 */
async function saveChange(
  request: AdminRequest,
  deps: AdminApiDeps,
  edit: (config: ClientConfig) => Record<string, unknown> | typeof noSuchSecret,
  event: AuditEventName,
  details: Readonly<Record<string, string>>,
  status: number,
  extra: Readonly<Record<string, unknown>> = {},
): Promise<void> {
  const { exchange } = request;
  if (refusedAsConfigured(request, deps)) return;
  const outcome = await deps.registry.change<readonly ConfigProblem[] | typeof noSuchSecret>(request.clientId, (current) => {
    const document = edit(current.config);
    if (document === noSuchSecret) return { refused: noSuchSecret };
    const checked = checkClientDocument(document, withStoredApiResources(deps.config(), deps.apiResources), deps.grantTypes());
    return checked.ok ? { config: checked.client } : { refused: checked.problems };
  });
  switch (outcome.status) {
    case 'missing':
      return notFound(exchange);
    case 'conflict':
      return sendError(exchange, 409, 'conflict', 'the client kept changing while this change was tried; read it and try again');
    case 'refused':
      return outcome.refused === noSuchSecret ? notFound(exchange) : sendProblems(exchange, outcome.refused);
    case 'written':
      audit(deps, request, event, request.clientId, details);
      send(exchange, status, { client: clientView(outcome.record), ...extra });
  }
}

function refusedAsConfigured(request: AdminRequest, deps: AdminApiDeps): boolean {
  if (!deps.config().clients.some((c) => c.clientId === request.clientId)) return false;
  sendError(request.exchange, 409, 'conflict', 'a client of the config file changes with the config file');
  return true;
}

function audit(
  deps: AdminApiDeps,
  request: AdminRequest,
  name: AuditEventName,
  clientId: string,
  details: Readonly<Record<string, string>> = {},
): void {
  deps.emit({
    name,
    outcome: 'success',
    clientId,
    remoteAddress: request.remoteAddress,
    endpoint: 'admin',
    ...(Object.keys(details).length > 0 ? { details } : {}),
  });
}

/** The body's bytes (`undefined` when empty); an oversized one is answered here. */
function readBodyBytes(exchange: Exchange, method: string, next: (bytes: Uint8Array | undefined) => void): void {
  if (method === 'get' || method === 'head' || method === 'delete') {
    next(undefined);
    return;
  }
  readBody(exchange, maxAdminBody, {
    onBody(bytes) {
      next(bytes.byteLength === 0 ? undefined : bytes);
    },
    onTooLarge() {
      sendError(exchange, 413, 'invalid_request', `the body is over ${maxAdminBody} bytes`);
    },
  });
}

const badJson: unique symbol = Symbol('bad JSON');

/** The body as JSON (`undefined` when there is none), or `badJson` once answered `400`. */
function parseJsonBody(exchange: Exchange, bytes: Uint8Array | undefined): unknown {
  if (bytes === undefined) return undefined;
  try {
    return JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    sendError(exchange, 400, 'invalid_request', 'the body is not JSON');
    return badJson;
  }
}

function failed(deps: AdminApiDeps, exchange: Exchange, err: unknown): void {
  if (isStoreUnavailable(err)) sendError(exchange, 503, 'temporarily_unavailable', 'the store is unavailable', { retryAfter: 2 });
  else {
    deps.logger.error({ err }, 'admin request failed');
    sendError(exchange, 500, 'server_error', 'unexpected error');
  }
}

/** RFC 6750 §2.1: `Bearer` (any case) and a b64token. */
const bearerToken = /^bearer +([A-Za-z0-9\-._~+/]+=*)$/i;

/**
 * RFC 6750 §3.1: without credentials the challenge names only the scheme; with credentials that
 * fail, `invalid_token`.
 */
function unauthorized(exchange: Exchange, credentialsGiven: boolean): void {
  const challenge = credentialsGiven ? 'Bearer realm="admin", error="invalid_token"' : 'Bearer realm="admin"';
  exchange.sendJson(401, '{"error":"invalid_token"}', { wwwAuthenticate: challenge });
}

/**
 * `admin.tokenScope` (docs/operations.md, "Admin API"): one of this issuer's access tokens whose
 * `scope` holds the admin scope. A worker checks the token (signatures are never checked on this
 * thread, docs/architecture.md); a good token without the scope is `403 insufficient_scope`
 * (RFC 6750 §3.1). Resolves whether the request may go on; otherwise it was answered.
 */
async function authorizeAccessToken(
  exchange: Exchange,
  token: string,
  scope: string,
  check: (token: string) => Promise<TokenTaskResult>,
): Promise<boolean> {
  const [status, body, retryAfter] = await check(token);
  if (status === 200) {
    const granted = (JSON.parse(body) as { scope?: unknown }).scope;
    if (typeof granted === 'string' && granted.split(' ').includes(scope)) return true;
    exchange.sendJson(403, JSON.stringify({ error: 'insufficient_scope', error_description: `the token does not grant ${scope}` }), {
      wwwAuthenticate: `Bearer realm="admin", error="insufficient_scope", scope="${scope}"`,
    });
    return false;
  }
  if (status === 401) unauthorized(exchange, true);
  else if (status === 503) sendError(exchange, 503, 'temporarily_unavailable', 'the store is unavailable', { retryAfter: retryAfter ?? 2 });
  else sendError(exchange, 500, 'server_error', 'unexpected error');
  return false;
}

function send(exchange: Exchange, status: number, body: unknown): void {
  exchange.sendJson(status, JSON.stringify(body));
}

function sendError(exchange: Exchange, status: number, error: string, description: string, extras?: { retryAfter: number }): void {
  exchange.sendJson(status, JSON.stringify({ error, error_description: description }), extras);
}

/** 400 naming each field (RFC 7591 §3.2.2's error code for bad client metadata). */
function sendProblems(exchange: Exchange, problems: readonly ConfigProblem[]): void {
  const description = problems.map((p) => `${p.path}: ${p.message}`).join('; ');
  send(exchange, 400, { error: 'invalid_client_metadata', error_description: description, problems });
}

function notFound(exchange: Exchange): void {
  sendError(exchange, 404, 'not_found', 'no such client or secret');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isDate(value: unknown): value is string {
  return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(Date.parse(value));
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
