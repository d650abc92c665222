import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { OAuthErrors } from '../../core/oauth_errors.js';
import { ScopeRules } from '../../core/rules/scope_rules.js';
import type { Store } from '../../core/store/store.js';
import type { ClientAuthenticationDeps } from '../client_authentication/step.js';
import type { LoadedConfig } from '../config/load.js';
import { createDeviceAuthorizationEndpoint, deviceAuthorizationPath } from './device_authorization_endpoint.js';
import { createPushedAuthorizationEndpoint, pushedAuthorizationPath } from './pushed_authorization_endpoint.js';
import { authorizationServerMetadataPath, discoveryPath, jwksPath, withStoredScopes } from './discovery.js';
import { CorsPolicy } from '../http/cors.js';
import type { ApiResourceRegistry } from '../client_registry/api_resource_registry.js';
import { Exchange } from '../http/exchange.js';
import { withStrictFraming } from '../http/framing.js';
import { createIntrospectionEndpoint } from './introspection_endpoint.js';
import type { EndpointObservers } from '../observability/endpoint_outcomes.js';
import type { AuditEvents } from '../observability/events/audit_events.js';
import { registerMetricsRoute } from '../observability/management_listener.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import { registerAuthorizeEndpoint } from '../pages/authorize_endpoint.js';
import { registerDeviceEndpoint } from '../pages/device_endpoint.js';
import { registerEndSessionEndpoint } from '../pages/end_session_endpoint.js';
import { registerGrantsPage } from '../pages/grants_page.js';
import { pagesUnavailable } from '../pages/pages_unavailable.js';
import { PageSecrets } from '../pages/session.js';
import { createRevocationEndpoint } from './revocation_endpoint.js';
import { createTokenEndpoint } from './token_endpoint.js';
import { createUserInfoEndpoint, userInfoPath } from './userinfo_endpoint.js';
import type { WorkerDispatcher } from '../dispatch/worker_dispatcher.js';
import type { KeyRing } from '../keys/key_ring.js';
import { deriveDPoPNonceKey } from '../keys/dpop_nonce_key.js';
import { DPoPNonces, requiresDPoPNonce } from '../../core/dpop_nonce.js';
import { endpointPaths } from './endpoint_paths.js';
import { registerRegistrationEndpoint } from './registration_endpoint.js';
import { RequestRate } from '../../core/throttles.js';
import type { ClientDirectory } from '../client_registry/client_directory.js';
import type { RegisteredClient } from '../../core/client_model.js';

/** What the routes are built from; everything here is made once at start. */
export interface RouteDeps {
  readonly config: LoadedConfig;
  /** The signing keys: the JWKS follows a rotation or a reload. */
  readonly keys: KeyRing;
  /**
   * The pages' own secret (gateway/keys/page_secret.ts), unaffected by key rotation; `undefined`
   * while it has not come from the store: the pages and DPoP nonces answer 503 until the routes are
   * built again with it (docs/operations.md, "Starting without the store").
   */
  readonly pageSecret: string | undefined;
  readonly store: Store;
  /** The config file's clients, then the client registry's when there is one (the pages find clients here). */
  readonly clients: ClientDirectory;
  /** One authenticator and one throttle for every endpoint that authenticates clients. */
  readonly clientAuthentication: ClientAuthenticationDeps;
  readonly dispatcher: WorkerDispatcher;
  readonly metrics: GatewayMetrics;
  /** Metrics, access log and audit events of each OAuth endpoint's answers. */
  readonly observers: EndpointObservers;
  readonly events: AuditEvents;
  /** `/metrics` on this (public) listener, behind this bearer token (`management.onPublicPort`); else not here. */
  readonly publicMetricsToken: string | undefined;
  /** Read per request: a validator reload changes both. */
  readonly grantTypes: () => ReadonlySet<string>;
  readonly discoveryBody: () => string;
  /** True once a graceful stop has begun: `/readyz` answers 503 from then on. */
  readonly draining: () => boolean;
  /** Security event lines of the pages (docs/security.md). */
  readonly logger: Logger;
  /** `dynamicClientRegistration.initialAccessTokenFile`'s token, read at start; `undefined`: open registration. */
  readonly initialAccessToken?: string | undefined;
  /** With `clientRegistry.store`: the store-kept API resources (scopes, audiences, introspection). */
  readonly apiResources?: ApiResourceRegistry | undefined;
}

/**
 * Every endpoint of docs/endpoints.md on one uWS app, each behind the framing check that uWS
 * does not make itself (docs/operations.md, "HTTP framing").
 */
export function registerRoutes(uwsApp: TemplatedApp, deps: RouteDeps): void {
  const app = withStrictFraming(uwsApp);
  const { config, keys, store, clients, clientAuthentication, dispatcher, metrics, observers, events } = deps;
  // Browser clients' origins (docs/endpoints.md, "CORS"); none configured: no endpoint reads `Origin`.
  // With a client registry, store-kept clients' origins too (gateway/client_registry/cors_origins.ts).
  const allOrigins = new CorsPolicy(config.clients, clients.registry?.origins);
  const cors = allOrigins.empty ? undefined : allOrigins;
  const dpopNonceFor = dpopNonceProvider(config, deps.pageSecret);
  app.any(
    endpointPaths.token,
    createTokenEndpoint({
      ...clientAuthentication,
      grantTypes: deps.grantTypes,
      dispatcher,
      observe: observers.token,
      begin: observers.begin.token,
      cors,
      dpopNonceFor,
    }),
  );
  app.any(
    endpointPaths.introspection,
    createIntrospectionEndpoint({
      ...clientAuthentication,
      apiResources: config.apiResources,
      storedApiResources: deps.apiResources,
      dispatcher,
      observe: observers.introspection,
      begin: observers.begin.introspection,
    }),
  );
  app.any(
    endpointPaths.revocation,
    createRevocationEndpoint({
      ...clientAuthentication,
      dispatcher,
      observe: observers.revocation,
      begin: observers.begin.revocation,
      cors,
      dpopNonceFor,
    }),
  );
  app.any(userInfoPath, createUserInfoEndpoint({ dispatcher, cors }));

  const scopes = new ScopeRules(config);
  // Store-kept API resources' scopes and audiences too, as they change (docs/configuration.md).
  deps.apiResources?.follow(scopes);
  app.any(
    deviceAuthorizationPath,
    createDeviceAuthorizationEndpoint({
      ...clientAuthentication,
      scopes,
      store,
      rate: config.throttling.deviceAuthorization,
      dispatcher,
      observe: observers.deviceAuthorization,
      begin: observers.begin.deviceAuthorization,
    }),
  );
  app.any(
    pushedAuthorizationPath,
    createPushedAuthorizationEndpoint({
      ...clientAuthentication,
      scopes,
      store,
      dispatcher,
      settings: config.pushedAuthorizationRequests,
      dpopNonceFor,
      logger: deps.logger,
      observe: observers.pushedAuthorization,
      begin: observers.begin.pushedAuthorization,
    }),
  );
  // Without the secret the same routes are registered, answering 503; the handlers built here
  // with a secret of their own are never called.
  const pages = deps.pageSecret === undefined ? pagesUnavailable(app) : app;
  const secrets = pageSecretsOf(config, deps.pageSecret ?? randomBytes(32).toString('base64url'));
  registerAuthorizeEndpoint(pages, {
    config,
    clients,
    scopes,
    secrets,
    dispatcher,
    store,
    events,
    clientKeys: clientAuthentication.clientKeys,
    logger: deps.logger,
  });
  registerDeviceEndpoint(pages, {
    config,
    clients,
    secrets,
    dispatcher,
    store,
    events,
    logger: deps.logger,
    onThrottled: () => metrics.countThrottleHit('user_code'),
  });
  registerEndSessionEndpoint(pages, { issuer: config.issuer, clients, secrets, keys: () => keys.set.keys });
  registerGrantsPage(pages, { config, clients, secrets, store, events });
  // Not registered when off: the path is then unknown, 404 like any other (docs/endpoints.md).
  if (config.dynamicClientRegistration.enabled && clients.registry !== undefined) {
    registerRegistrationEndpoint(app, {
      config,
      registry: clients.registry,
      grantTypes: deps.grantTypes,
      initialAccessToken: deps.initialAccessToken,
      rate: new RequestRate(store, 'register', config.throttling.clientRegistration),
      events,
      logger: deps.logger,
    });
  }

  // Resource servers cache both; a new key is published at least this long before it signs
  // (signing.rotation.propagation, docs/operations.md "Signing keys and rotation").
  const publicCache = `public, max-age=${config.signing.jwksMaxAgeSeconds}`;
  // With store-kept API resources, their scopes in `scopes_supported` too.
  const discoveryBody = deps.apiResources === undefined ? deps.discoveryBody : withStoredScopes(deps.discoveryBody, deps.apiResources);
  const discovery = getOnly((ex) => ex.sendStatic(200, 'application/json; charset=utf-8', discoveryBody(), publicCache), cors);
  app.any(discoveryPath, discovery);
  app.any(authorizationServerMetadataPath(config.issuer), discovery);
  app.any(
    jwksPath,
    getOnly((ex) => ex.sendStatic(200, 'application/jwk-set+json', keys.jwksBody, publicCache), cors),
  );

  app.any(
    endpointPaths.healthz,
    getOnly((ex) => ex.sendStatic(200, 'application/json', '{"status":"ok"}', 'no-store')),
  );
  app.any(
    endpointPaths.readyz,
    getOnly((ex) =>
      answerReadiness(ex, {
        store,
        dispatcher,
        keyCount: () => keys.set.keys.length,
        draining: deps.draining,
        pageSecret: deps.pageSecret !== undefined,
      }),
    ),
  );
  // By default /metrics is on the management listener only (gateway/observability/management_listener.ts).
  if (deps.publicMetricsToken !== undefined) registerMetricsRoute(app, metrics, deps.publicMetricsToken);
  app.any('/*', (res, req) => {
    new Exchange(res, req.getMethod()).sendStatic(404, 'application/json', '{"error":"not_found"}', 'no-store');
  });
}

/**
 * The DPoP nonce a client that must use one gets on each token answer (RFC 9449 §8); the workers
 * check it. `null` for such a client while the page secret, the nonces' key, is not loaded.
 */
function dpopNonceProvider(config: LoadedConfig, pageSecret: string | undefined): (client: RegisteredClient) => string | undefined | null {
  if (pageSecret === undefined) return (client) => (requiresDPoPNonce(client, config.dpop) ? null : undefined);
  const nonces = new DPoPNonces(deriveDPoPNonceKey(pageSecret), config.dpop.nonceLifetimeSeconds);
  return (client) => (requiresDPoPNonce(client, config.dpop) ? nonces.current(Date.now()) : undefined);
}

/**
 * Keys for the pages' cookies and CSRF tokens, from their own secret that every instance behind
 * one issuer shares (docs/operations.md, "Several gateways"), never from a signing key: a
 * rotation must not end sign-ins or break forms.
 */
function pageSecretsOf(config: LoadedConfig, secret: string): PageSecrets {
  return new PageSecrets(secret, new URL(config.issuer).origin, config.issuer.startsWith('https:'), config.sessionLifetimeSeconds * 1000);
}

interface Readiness {
  readonly store: Store;
  readonly dispatcher: WorkerDispatcher;
  readonly keyCount: () => number;
  readonly draining: () => boolean;
  /** Whether the page secret is loaded (it comes from the store). */
  readonly pageSecret: boolean;
}

/**
 * `/readyz`: 200 when keys, worker threads and a store that takes writes are there and no stop
 * has begun, else 503 naming what is not (docs/operations.md, "Health and readiness").
 */
function answerReadiness(exchange: Exchange, readiness: Readiness): void {
  checkReady(readiness).then(
    (problems) =>
      problems.length === 0
        ? exchange.sendStatic(200, 'application/json', '{"status":"ready"}', 'no-store')
        : exchange.sendStatic(503, 'application/json', JSON.stringify({ status: 'not_ready', problems }), 'no-store'),
    () => exchange.sendStatic(503, 'application/json', '{"status":"not_ready"}', 'no-store'),
  );
}

async function checkReady({ store, dispatcher, keyCount, draining, pageSecret }: Readiness): Promise<string[]> {
  const problems: string[] = [];
  if (draining()) problems.push('draining');
  if (keyCount() === 0) problems.push('no signing keys');
  if (!pageSecret) problems.push('no page secret');
  if (dispatcher.currentPool.threads.length === 0) problems.push('no worker threads');
  try {
    await store.checkReady();
  } catch {
    problems.push('store not serving');
  }
  return problems;
}

/**
 * Discovery, JWKS, health and metrics answer GET and HEAD only (405 with `Allow: GET`); HEAD without
 * content. With `cors`, browser pages of the allowed origins may read the answer.
 */
function getOnly(handler: (exchange: Exchange) => void, cors?: CorsPolicy): (res: HttpResponse, req: HttpRequest) => void {
  return (res, req) => {
    const method = req.getMethod();
    const exchange = new Exchange(res, method);
    if (cors !== undefined && cors.answerPreflightOrMark(exchange, req, method, 'GET')) return;
    if (method !== 'get' && method !== 'head') {
      exchange.sendError(OAuthErrors.getOnly, { allow: 'GET' });
      return;
    }
    handler(exchange);
  };
}
