/**
 * Dynamic client registration (RFC 7591) and its management protocol (RFC 7592), on the public
 * port when `dynamicClientRegistration.enabled` (docs/endpoints.md, "Dynamic client
 * registration"). A registered client is a store-kept client like the admin API's
 * (gateway/client_registry/), with its registration access token's hash and its metadata beside
 * it in the same record. Registration is rate-limited per source address and its body capped, so
 * that a stranger cannot fill the store.
 */
import { decodePathParameter } from '../http/path_parameter.js';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { Logger } from 'pino';
import { OAuthErrors } from '../../core/oauth_errors.js';
import { isStoreUnavailable } from '../../core/store/store.js';
import type { RequestRate } from '../../core/throttles.js';
import { checkClientDocument, generateSecret } from '../admin/client_document.js';
import { checkClientMetadata, clientDocumentOf, usesClientSecret, type ClientMetadata } from '../client_registry/client_metadata.js';
import type { ClientRegistration, ClientRegistry, StoredClientRecord } from '../client_registry/client_registry.js';
import type { LoadedConfig } from '../config/load.js';
import { readBody } from '../http/body_reader.js';
import { Exchange } from '../http/exchange.js';
import type { AuditEventName } from '../observability/events/audit_event.js';
import type { AuditEvents } from '../observability/events/audit_events.js';
import { endpointPaths } from './endpoint_paths.js';

export interface RegistrationEndpointDeps {
  readonly config: LoadedConfig;
  readonly registry: ClientRegistry;
  /** Grant types a client may be checked against (validators included). */
  readonly grantTypes: () => Iterable<string>;
  /** `initialAccessTokenFile`'s token; `undefined`: open registration (RFC 7591 §3). */
  readonly initialAccessToken: string | undefined;
  /** Registrations per source address (`throttling.clientRegistration`). */
  readonly rate: RequestRate;
  readonly events: AuditEvents;
  readonly logger: Logger;
}

interface RegistrationRoute extends RegistrationEndpointDeps {
  /** SHA-256 of `Bearer <initial access token>`, compared in constant time. */
  readonly expectedInitial: Buffer | undefined;
}

/** One request, copied out of uWS before anything asynchronous. */
interface RegistrationRequest {
  readonly exchange: Exchange;
  readonly method: string;
  readonly authorization: string;
  readonly clientId: string;
}

const unavailable = JSON.stringify({ error: 'temporarily_unavailable', error_description: 'the store is unavailable' });

/** Mounts `POST /connect/register` and `GET|PUT|DELETE /connect/register/<client_id>`. */
export function registerRegistrationEndpoint(app: Pick<TemplatedApp, 'any'>, deps: RegistrationEndpointDeps): void {
  const route: RegistrationRoute = {
    ...deps,
    expectedInitial: deps.initialAccessToken === undefined ? undefined : digest(`Bearer ${deps.initialAccessToken}`),
  };
  app.any(endpointPaths.registration, (res, req) => {
    const request = copyRequest(res, req, '');
    if (request.method !== 'post') return methodNotAllowed(request.exchange, 'POST');
    readJson(route, request, (body) => void guarded(request, () => register(route, request, body)));
  });
  app.any(`${endpointPaths.registration}/:clientId`, (res, req) => {
    const request = copyRequest(res, req, decodePathParameter(req.getParameter(0)));
    const { method } = request;
    if (method === 'get') void guarded(request, () => readClient(route, request));
    else if (method === 'delete') void guarded(request, () => deleteClient(route, request));
    else if (method === 'put') readJson(route, request, (body) => void guarded(request, () => updateClient(route, request, body)));
    else methodNotAllowed(request.exchange, 'GET, PUT, DELETE');
  });
}

/**
 * RFC 7591 §3: the rate first (every attempt from an address counts, so that guessing the initial
 * access token is limited too), then the initial access token, then the metadata.
 */
async function register(route: RegistrationRoute, request: RegistrationRequest, body: unknown): Promise<void> {
  const { exchange } = request;
  const address = exchange.remoteAddress();
  const retryAfter = await route.rate.take(address);
  if (retryAfter > 0) {
    sendError(exchange, 429, 'too_many_requests', 'too many registrations from this address', { retryAfter });
    return;
  }
  if (route.expectedInitial !== undefined && !timingSafeEqual(digest(request.authorization), route.expectedInitial)) {
    // RFC 7591 §3: an initial access token is an OAuth 2.0 bearer token (RFC 6750 §3).
    exchange.sendJson(401, '{"error":"invalid_token"}', { wwwAuthenticate: 'Bearer error="invalid_token"' });
    return;
  }
  const checked = checkMetadata(route, exchange, body);
  if (checked === undefined) return;
  const clientId = randomBytes(16).toString('base64url');
  const generated = usesClientSecret(checked.token_endpoint_auth_method) ? generateSecret() : undefined;
  const config = configOf(route, exchange, clientId, checked, generated === undefined ? [] : [generated.stored]);
  if (config === undefined) return;
  const token = randomBytes(32).toString('base64url');
  // A new random id: no gateway's cache to empty (ClientRegistry.create).
  const record = await route.registry.create(config, { tokenHash: hashToken(token), metadata: checked });
  audit(route, 'ClientCreated', clientId, address);
  // RFC 7591 §3.2.1, with RFC 7592 §3's registration access token and client URI.
  send(exchange, 201, {
    ...responseOf(route, record, checked),
    ...(generated === undefined ? {} : { client_secret: generated.secret, client_secret_expires_at: 0 }),
    registration_access_token: token,
  });
}

/** RFC 7592 §2.1: the client's metadata as registered (its secret is stored hashed: not shown again). */
async function readClient(route: RegistrationRoute, request: RegistrationRequest): Promise<void> {
  const found = await authorized(route, request);
  if (found === undefined) return;
  send(request.exchange, 200, responseOf(route, found.record, found.registration.metadata));
}

/**
 * RFC 7592 §2.2: the metadata replaced by the request's. `client_id` must be the client's; a
 * `client_secret`, if sent, its current one. The secret stays, is issued when the client turns
 * confidential, and goes when it turns public; an admin's `enabled: false` stays. Written by
 * compare-and-set over the client as stored (ClientRegistry.change, docs/operations.md "Admin
 * API"): an admin's change or deletion made meanwhile is neither undone nor lost, and a client
 * deleted meanwhile answers as an unknown one.
 */
async function updateClient(route: RegistrationRoute, request: RegistrationRequest, body: unknown): Promise<void> {
  const found = await authorized(route, request);
  if (found === undefined) return;
  const { exchange } = request;
  const given = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  if (given.client_id !== request.clientId) return sendError(exchange, 400, 'invalid_client_metadata', 'client_id must be the client’s');
  const { client_id: _id, client_secret: secret, ...metadataOnly } = given;
  if (secret !== undefined && (typeof secret !== 'string' || !isCurrentSecret(found.record, secret))) {
    return sendError(exchange, 400, 'invalid_client_metadata', 'client_secret is not the client’s current secret');
  }
  const checked = checkMetadata(route, exchange, metadataOnly);
  if (checked === undefined) return;
  const secretMethod = usesClientSecret(checked.token_endpoint_auth_method);
  // Made at most once: a try after a conflict issues the same secret.
  let issued: ReturnType<typeof generateSecret> | undefined;
  let generated: ReturnType<typeof generateSecret> | undefined;
  const outcome = await route.registry.change<UpdateRefusal>(request.clientId, (current) => {
    // Checked again on the client as it is now: its token or secret may have changed meanwhile.
    if (current.registration?.tokenHash !== found.registration.tokenHash) return { refused: { reason: 'token' } };
    if (typeof secret === 'string' && !isCurrentSecret(current, secret)) return { refused: { reason: 'secret' } };
    const keep = secretMethod && current.config.clientSecrets.length > 0;
    generated = !secretMethod || keep ? undefined : (issued ??= generateSecret());
    const secrets = keep ? current.config.clientSecrets : generated === undefined ? [] : [generated.stored];
    const document = checkClientDocument(clientDocumentOf(request.clientId, checked, secrets), route.config, route.grantTypes());
    if (!document.ok)
      return { refused: { reason: 'metadata', description: document.problems.map((p) => `${p.path}: ${p.message}`).join('; ') } };
    return {
      config: { ...document.client, enabled: current.config.enabled },
      registration: { ...found.registration, metadata: checked },
    };
  });
  switch (outcome.status) {
    case 'missing':
      return invalidToken(exchange);
    case 'conflict':
      return sendError(exchange, 409, 'conflict', 'the client kept changing while this update was tried; try again');
    case 'refused':
      if (outcome.refused.reason === 'token') return invalidToken(exchange);
      return sendError(
        exchange,
        400,
        'invalid_client_metadata',
        outcome.refused.reason === 'secret' ? 'client_secret is not the client’s current secret' : outcome.refused.description,
      );
    case 'written':
      audit(route, 'ClientUpdated', request.clientId, exchange.remoteAddress());
      send(exchange, 200, {
        ...responseOf(route, outcome.record, checked),
        ...(generated === undefined ? {} : { client_secret: generated.secret, client_secret_expires_at: 0 }),
      });
  }
}

/** Why an update tried on the client as stored now was refused. */
type UpdateRefusal = { reason: 'token' } | { reason: 'secret' } | { reason: 'metadata'; description: string };

function isCurrentSecret(record: StoredClientRecord, secret: string): boolean {
  return record.config.clientSecrets.some((s) => s.value === sha256Base64(secret));
}

/** RFC 7592 §2.3: the client and its registration go; its tokens then fail with it. */
async function deleteClient(route: RegistrationRoute, request: RegistrationRequest): Promise<void> {
  const found = await authorized(route, request);
  if (found === undefined) return;
  await route.registry.remove(request.clientId);
  audit(route, 'ClientDeleted', request.clientId, request.exchange.remoteAddress());
  request.exchange.sendJson(204, '');
}

/**
 * The registered client the path names, when the request carries its registration access token
 * (compared in constant time on SHA-256 digests). Anything else, an unknown client, one the admin
 * API made, a config file's, is the same `401 invalid_token` (RFC 7592 §2.1, RFC 6750 §3.1): it
 * tells nothing about which clients exist.
 */
async function authorized(
  route: RegistrationRoute,
  request: RegistrationRequest,
): Promise<{ record: StoredClientRecord; registration: ClientRegistration } | undefined> {
  const presented = request.authorization.startsWith('Bearer ') ? request.authorization.slice(7) : '';
  const record = request.clientId === '' ? null : await route.registry.read(request.clientId);
  const registration = record?.registration;
  const expected = Buffer.from(registration?.tokenHash ?? '', 'base64url');
  const matches = timingSafeEqual(digest(presented), expected.length === 32 ? expected : Buffer.alloc(32));
  if (record === null || registration === undefined || !matches || presented === '') {
    invalidToken(request.exchange);
    return undefined;
  }
  return { record, registration };
}

/** RFC 6750 §3.1 for RFC 7592 §2: the same answer for any client this token does not manage. */
function invalidToken(exchange: Exchange): void {
  exchange.sendJson(401, '{"error":"invalid_token"}', { wwwAuthenticate: 'Bearer error="invalid_token"' });
}

/** The request's metadata within the policy; a `400` of RFC 7591 §3.2.2 otherwise. */
function checkMetadata(route: RegistrationRoute, exchange: Exchange, body: unknown): ClientMetadata | undefined {
  const outcome = checkClientMetadata(body, route.config.dynamicClientRegistration.policy);
  if (outcome.ok) return outcome.metadata;
  sendError(exchange, 400, outcome.error, outcome.description);
  return undefined;
}

/** The client config, checked as the admin API checks one (scopes known, grant types served). */
function configOf(
  route: RegistrationRoute,
  exchange: Exchange,
  clientId: string,
  metadata: ClientMetadata,
  secrets: readonly unknown[],
): StoredClientRecord['config'] | undefined {
  const checked = checkClientDocument(clientDocumentOf(clientId, metadata, secrets), route.config, route.grantTypes());
  if (checked.ok) return checked.client;
  sendError(exchange, 400, 'invalid_client_metadata', checked.problems.map((p) => `${p.path}: ${p.message}`).join('; '));
  return undefined;
}

/** RFC 7591 §3.2.1 / RFC 7592 §3: the metadata with what the server provisioned. */
function responseOf(route: RegistrationRoute, record: StoredClientRecord, metadata: ClientMetadata): Record<string, unknown> {
  const clientId = record.config.clientId;
  return {
    client_id: clientId,
    client_id_issued_at: Math.floor(record.createdAt / 1000),
    ...metadata,
    registration_client_uri: `${route.config.issuer}${endpointPaths.registration}/${encodeURIComponent(clientId)}`,
  };
}

function audit(route: RegistrationRoute, name: AuditEventName, clientId: string, remoteAddress: string): void {
  route.events.emit({ name, outcome: 'success', clientId, remoteAddress, endpoint: 'registration' });
}

/** Runs a step; a store outage is `503` with `Retry-After`, anything else `500`, never no answer. */
async function guarded(request: RegistrationRequest, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (err) {
    if (isStoreUnavailable(err)) request.exchange.sendJson(503, unavailable, { retryAfter: 2 });
    else sendError(request.exchange, 500, 'server_error', 'unexpected error');
  }
}

function copyRequest(res: HttpResponse, req: HttpRequest, clientId: string): RegistrationRequest {
  const method = req.getMethod();
  return { exchange: new Exchange(res, method), method, authorization: req.getHeader('authorization'), clientId };
}

/** The JSON body, at most `maxMetadataBytes` (a `413` past it, a `400` for what is not JSON). */
function readJson(route: RegistrationRoute, request: RegistrationRequest, next: (body: unknown) => void): void {
  const limit = route.config.dynamicClientRegistration.maxMetadataBytes;
  readBody(request.exchange, limit, {
    onBody(bytes) {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.from(bytes).toString('utf8'));
      } catch {
        sendError(request.exchange, 400, 'invalid_client_metadata', 'the body is not JSON');
        return;
      }
      next(body);
    },
    onTooLarge() {
      sendError(request.exchange, 413, 'invalid_client_metadata', `the metadata is over ${limit} bytes`);
    },
  });
}

function methodNotAllowed(exchange: Exchange, allow: string): void {
  exchange.sendError(OAuthErrors.registrationMethod, { allow });
}

function send(exchange: Exchange, status: number, body: unknown): void {
  exchange.sendJson(status, JSON.stringify(body));
}

function sendError(exchange: Exchange, status: number, error: string, description: string, extras?: { retryAfter: number }): void {
  exchange.sendJson(status, JSON.stringify({ error, error_description: description }), extras);
}

function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('base64url');
}

/** A client secret's stored form (docs/configuration.md, "Client secrets"). */
function sha256Base64(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('base64');
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
