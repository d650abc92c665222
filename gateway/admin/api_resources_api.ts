/**
 * The admin API's store-kept API resources (docs/operations.md, "Admin API"): created, read,
 * changed, deleted and listed, their secrets (for introspection) added and expired, behind the
 * admin API's own authentication (`registerAdminRoutes`). A resource's JSON is the config file's
 * `apiResources[i]`, checked by the same schema (`apiResourceSchema`); its scopes need not be in
 * `apiScopes`: one that is not becomes an API scope while the resource lists it. Every change is
 * an audit event (`ApiResource*`, category `Configuration`).
 */
import type { ApiResourceRegistry, StoredApiResource, StoredApiResourceRecord } from '../client_registry/api_resource_registry.js';
import type { LoadedConfig } from '../config/load.js';
import type { AuditEventInput } from '../observability/events/audit_event.js';
import { offlineAccessScope } from '../../core/rules/scope_rules.js';
import type { ConfigProblem } from '../config/config_error.js';
import { apiResourceSchema } from '../config/schema.js';
import { describeIssue, toProblems } from '../config/schema_issues.js';
import type { Exchange } from '../http/exchange.js';
import type { AuditEventName } from '../observability/events/audit_event.js';
import { generateSecret, secretId, secretViews, sourceView } from './client_document.js';

export const apiResourcePaths = {
  resources: '/admin/api-resources',
  resource: '/admin/api-resources/:name',
  secrets: '/admin/api-resources/:name/secrets',
  expireSecret: '/admin/api-resources/:name/secrets/:secretId/expire',
} as const;

/** What these routes read of the admin API's request (`AdminRequest` in admin_api.ts): `clientId` is the path's first parameter, the name. */
interface AdminRequest {
  readonly exchange: Exchange;
  readonly clientId: string;
  readonly secretId: string;
  readonly query: (name: string) => string | undefined;
}

/** What these routes read of the admin API's deps (`AdminApiDeps` in admin_api.ts). */
interface AdminApiDeps {
  readonly apiResources?: ApiResourceRegistry | undefined;
  readonly config: () => LoadedConfig;
  readonly emit: (event: AuditEventInput) => void;
}

type Handler = (request: AdminRequest, body: unknown, deps: AdminApiDeps) => Promise<void>;

const defaultPageSize = 100;
const maxPageSize = 1000;

/** Mounts the API resource routes with the admin API's `route` (its authentication and body reading). */
export function registerApiResourceRoutes(route: (path: string, handlers: Readonly<Record<string, Handler>>) => void): void {
  route(apiResourcePaths.resources, { get: listResources, post: createResource });
  route(apiResourcePaths.resource, { get: showResource, patch: updateResource, delete: deleteResource });
  route(apiResourcePaths.secrets, { post: addSecret });
  route(apiResourcePaths.expireSecret, { post: expireSecret });
}

type Checked = { ok: true; resource: StoredApiResourceRecord['resource'] } | { ok: false; problems: readonly ConfigProblem[] };

/** `document` as an API resource beside `deps`' config: the config file's schema, then its name and scopes. */
function checkResourceDocument(document: unknown, deps: AdminApiDeps): Checked {
  const parsed = apiResourceSchema.safeParse(document, { error: describeIssue });
  if (!parsed.success) return { ok: false, problems: parsed.error.issues.flatMap(toProblems) };
  const resource = parsed.data;
  const config = deps.config();
  const problems: ConfigProblem[] = [];
  const identity = new Set(config.identityResources.map((r) => r.name));
  resource.scopes.forEach((scope, i) => {
    // A scope is an API scope or an identity scope, never both (docs/configuration.md).
    if (identity.has(scope) || scope === offlineAccessScope)
      problems.push({ path: `scopes[${i}]`, message: `"${scope}" is not an API scope` });
  });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, resource };
}

async function listResources(request: AdminRequest, _body: unknown, deps: AdminApiDeps): Promise<void> {
  const limitText = request.query('limit');
  const limit = limitText === undefined ? defaultPageSize : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > maxPageSize) {
    sendError(request.exchange, 400, 'invalid_request', `limit must be an integer from 1 to ${maxPageSize}`);
    return;
  }
  const page = registryOf(deps).list(request.query('after'), limit);
  send(request.exchange, 200, { apiResources: page.resources.map((r) => resourceView(r)), next: page.next });
}

async function createResource(request: AdminRequest, body: unknown, deps: AdminApiDeps): Promise<void> {
  const { exchange } = request;
  if (!isObject(body)) return sendError(exchange, 400, 'invalid_request', 'the body must be a JSON object');
  const registry = registryOf(deps);
  if (typeof body.name === 'string' && deps.config().apiResources.some((r) => r.name === body.name)) {
    return sendError(exchange, 409, 'conflict', 'an API resource of the config file has this name');
  }
  // Without secrets it gets one, shown once: a resource authenticates at introspection with it.
  const generated = body.secrets === undefined ? generateSecret() : undefined;
  const checked = checkResourceDocument(generated === undefined ? body : { ...body, secrets: [generated.stored] }, deps);
  if (!checked.ok) return sendProblems(exchange, checked.problems);
  if (registry.full) return sendError(exchange, 409, 'conflict', 'the store keeps at most 1000 API resources');
  if (!registry.fits(checked.resource)) return tooLarge(exchange);
  // One atomic write: a read first, then a write, let concurrent creations of one name all answer
  // 201, each with its own secret, and all but the last written secret never worked.
  const record = await registry.add(checked.resource);
  if (record === null) return sendError(exchange, 409, 'conflict', 'a store-kept API resource has this name');
  audit(deps, 'ApiResourceCreated', checked.resource.name);
  send(exchange, 201, { apiResource: resourceView(record), ...(generated === undefined ? {} : { secret: generated.secret }) });
}

async function showResource(request: AdminRequest, _body: unknown, deps: AdminApiDeps): Promise<void> {
  const name = request.clientId;
  const configured = deps.config().apiResources.find((r) => r.name === name);
  if (configured !== undefined) {
    send(request.exchange, 200, {
      apiResource: resourceView(
        { resource: { ...configured, scopes: [...configured.scopes], secrets: [...configured.secrets] }, createdAt: 0, updatedAt: 0 },
        'config',
      ),
    });
    return;
  }
  const record = await registryOf(deps).read(name);
  if (record === null) return notFound(request.exchange);
  send(request.exchange, 200, { apiResource: resourceView(record) });
}

/** `{"scopes": [...]}`: the members given replace the resource's; `name` cannot change, secrets change through `/secrets`. */
async function updateResource(request: AdminRequest, body: unknown, deps: AdminApiDeps): Promise<void> {
  const { exchange } = request;
  if (!isObject(body)) return sendError(exchange, 400, 'invalid_request', 'the body must be a JSON object');
  const problems: ConfigProblem[] = [];
  if (body.name !== undefined && body.name !== request.clientId) problems.push({ path: 'name', message: 'cannot change' });
  if (body.secrets !== undefined) problems.push({ path: 'secrets', message: 'change secrets with /secrets' });
  if (problems.length > 0) return sendProblems(exchange, problems);
  await saveChange(request, deps, (resource) => ({ ...resource, ...body }), 'ApiResourceUpdated', {}, 200);
}

async function deleteResource(request: AdminRequest, _body: unknown, deps: AdminApiDeps): Promise<void> {
  if (refusedAsConfigured(request, deps)) return;
  if (!(await registryOf(deps).remove(request.clientId))) return notFound(request.exchange);
  audit(deps, 'ApiResourceDeleted', request.clientId);
  request.exchange.sendJson(204, '');
}

/** A new generated secret beside the others (shown once). */
async function addSecret(request: AdminRequest, _body: unknown, deps: AdminApiDeps): Promise<void> {
  // Made once: a change tried again after a conflict adds the same secret to the resource as it is then.
  const generated = generateSecret();
  const id = secretId(generated.stored);
  const add = (resource: StoredApiResource): Record<string, unknown> => ({ ...resource, secrets: [...resource.secrets, generated.stored] });
  await saveChange(request, deps, add, 'ApiResourceSecretAdded', { secretId: id }, 201, { secret: generated.secret, secretId: id });
}

/** A secret expires now, or at `{"expiration": "<ISO date>"}`. */
async function expireSecret(request: AdminRequest, body: unknown, deps: AdminApiDeps): Promise<void> {
  const { exchange } = request;
  const options = body === undefined ? {} : body;
  if (!isObject(options)) return sendError(exchange, 400, 'invalid_request', 'the body must be a JSON object');
  const expiration = options.expiration ?? new Date().toISOString();
  if (typeof expiration !== 'string' || Number.isNaN(Date.parse(expiration))) {
    return sendProblems(exchange, [{ path: 'expiration', message: 'must be an ISO 8601 date or date-time' }]);
  }
  const expire = (resource: StoredApiResource): Record<string, unknown> | typeof noSuchSecret => {
    if (!resource.secrets.some((s) => secretId(s) === request.secretId)) return noSuchSecret;
    return { ...resource, secrets: resource.secrets.map((s) => (secretId(s) === request.secretId ? { ...s, expiration } : s)) };
  };
  await saveChange(request, deps, expire, 'ApiResourceUpdated', { secretId: request.secretId, expiration }, 200);
}

const noSuchSecret: unique symbol = Symbol('no such secret');
const notFitting: unique symbol = Symbol('not fitting the workers’ shared memory');

/**
 * Applies `edit` to the store-kept resource the path names, checks the result as a new resource
 * is checked, writes it and tells every gateway. The registry re-reads, re-applies and re-checks
 * when another change came first (docs/operations.md, "Admin API": concurrent changes are all
 * kept; a deleted resource stays deleted and answers 404); `409 conflict` only when the resource
 * kept changing through every try, as for clients (admin_api.ts).
 */
async function saveChange(
  request: AdminRequest,
  deps: AdminApiDeps,
  edit: (resource: StoredApiResource) => Record<string, unknown> | typeof noSuchSecret,
  event: AuditEventName,
  details: Readonly<Record<string, string>>,
  status: number,
  extra: Readonly<Record<string, unknown>> = {},
): Promise<void> {
  const { exchange } = request;
  if (refusedAsConfigured(request, deps)) return;
  const registry = registryOf(deps);
  const outcome = await registry.change<readonly ConfigProblem[] | typeof noSuchSecret | typeof notFitting>(request.clientId, (current) => {
    const document = edit(current.resource);
    if (document === noSuchSecret) return { refused: noSuchSecret };
    const checked = checkResourceDocument(document, deps);
    if (!checked.ok) return { refused: checked.problems };
    return registry.fits(checked.resource) ? { resource: checked.resource } : { refused: notFitting };
  });
  switch (outcome.status) {
    case 'missing':
      return notFound(exchange);
    case 'conflict':
      return sendError(exchange, 409, 'conflict', 'the API resource kept changing while this change was tried; read it and try again');
    case 'refused':
      if (outcome.refused === noSuchSecret) return notFound(exchange);
      return outcome.refused === notFitting ? tooLarge(exchange) : sendProblems(exchange, outcome.refused);
    case 'written':
      audit(deps, event, request.clientId, details);
      send(exchange, status, { apiResource: resourceView(outcome.record), ...extra });
  }
}

function tooLarge(exchange: Exchange): void {
  sendError(exchange, 409, 'conflict', 'the API resources would not fit the workers’ shared memory');
}

function refusedAsConfigured(request: AdminRequest, deps: AdminApiDeps): boolean {
  if (!deps.config().apiResources.some((r) => r.name === request.clientId)) return false;
  sendError(request.exchange, 409, 'conflict', 'an API resource of the config file changes with the config file');
  return true;
}

function registryOf(deps: AdminApiDeps): NonNullable<AdminApiDeps['apiResources']> {
  if (deps.apiResources === undefined) throw new Error('no API resource registry');
  return deps.apiResources;
}

/** A resource as the admin API shows it: each secret by its id, never its value or hash. */
function resourceView(record: StoredApiResourceRecord, source: 'store' | 'config' = 'store'): Record<string, unknown> {
  const { secrets, ...rest } = record.resource;
  return { ...rest, secrets: secretViews(secrets), ...sourceView(record, source) };
}

function audit(deps: AdminApiDeps, name: AuditEventName, resource: string, details: Readonly<Record<string, string>> = {}): void {
  deps.emit({ name, outcome: 'success', endpoint: 'admin', details: { apiResource: resource, ...details } });
}

function send(exchange: Exchange, status: number, body: unknown): void {
  exchange.sendJson(status, JSON.stringify(body));
}

function sendError(exchange: Exchange, status: number, error: string, description: string): void {
  exchange.sendJson(status, JSON.stringify({ error, error_description: description }));
}

function sendProblems(exchange: Exchange, problems: readonly ConfigProblem[]): void {
  const description = problems.map((p) => `${p.path}: ${p.message}`).join('; ');
  send(exchange, 400, { error: 'invalid_request', error_description: description, problems });
}

function notFound(exchange: Exchange): void {
  sendError(exchange, 404, 'not_found', 'no such API resource or secret');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
