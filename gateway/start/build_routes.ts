import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { registerClients } from '../../core/client_model.js';
import { ClientDirectory } from '../client_registry/client_directory.js';
import { ClientAuthenticator } from '../client_authentication/authenticator.js';
import { ClientKeys } from '../client_authentication/client_keys.js';
import type { ClientAuthenticationDeps } from '../client_authentication/step.js';
import { ClientAuthThrottle } from '../../core/throttles.js';
import type { LoadedConfig } from '../config/load.js';
import { createEndpointObservers } from '../observability/endpoint_outcomes.js';
import { recordRoutes, RouteTable, type RouteSet } from '../http/route_table.js';
import { TrustedProxies } from '../http/trusted_proxies.js';
import { ClientCertificates } from '../http/client_certificate.js';
import type { KeyRing } from '../keys/key_ring.js';
import { registerRoutes } from '../endpoints/routes.js';
import type { ValidatorReload } from '../validators/validator_reload.js';
import type { GatewayServices } from './build_services.js';
import { endpointPaths } from '../endpoints/endpoint_paths.js';
import type { GatewayState } from './gateway_state.js';

/**
 * Every route built from one config; a reload builds a new set and swaps it in. The failure
 * throttle keeps its counts across reloads unless its limits change.
 */
export class GatewayRoutes {
  readonly table: RouteTable;
  private throttle: ClientAuthThrottle;
  /** Read once at start, as the admin token is (docs/configuration.md, `dynamicClientRegistration`). */
  private readonly initialAccessToken: string | undefined;

  constructor(
    private readonly state: GatewayState,
    private readonly keys: KeyRing,
    private readonly services: GatewayServices,
    private readonly validators: ValidatorReload,
  ) {
    const { config, logger } = state;
    this.throttle = new ClientAuthThrottle(state.storage.store, config.throttling.clientAuthentication, logger);
    this.initialAccessToken = readInitialAccessToken(config);
    this.table = new RouteTable(this.build(config, this.throttle), services.serving);
  }

  /** The same config's routes again, now with the page secret (`adoptPageSecret`). */
  rebuild(): void {
    this.table.replace(this.build(this.state.config, this.throttle));
  }

  /** The routes of a reloaded config swapped in; `false` when it registers other routes. */
  replaceFor(next: LoadedConfig): boolean {
    const { store } = this.state.storage;
    const limits = next.throttling.clientAuthentication;
    const sameLimits = JSON.stringify(limits) === JSON.stringify(this.state.config.throttling.clientAuthentication);
    const nextThrottle = sameLimits ? this.throttle : new ClientAuthThrottle(store, limits, this.state.logger);
    if (!this.table.replace(this.build(next, nextThrottle))) return false;
    this.throttle = nextThrottle;
    return true;
  }

  private build(config: LoadedConfig, throttle: ClientAuthThrottle): RouteSet {
    const { state, keys, validators } = this;
    const { dispatcher, events, metrics, storeOutage, serving } = this.services;
    const { logger, tracing } = state;
    const clients = new ClientDirectory(registerClients(config.clients), state.clientRegistry);
    const proxies = new TrustedProxies(config.trustedProxies, config.forwardedHeader);
    return recordRoutes(
      (app) =>
        registerRoutes(app, {
          config,
          keys,
          pageSecret: state.pageSecret,
          store: state.storage.store,
          clients,
          clientAuthentication: clientAuthenticationOf(config, clients, throttle, logger),
          dispatcher,
          metrics,
          observers: createEndpointObservers({ metrics, events, logger, storeOutage, tracing }),
          events,
          publicMetricsToken: config.management.onPublicPort ? config.management.token : undefined,
          grantTypes: () => validators.grantTypes,
          discoveryBody: () => state.discoveryBody,
          draining: () => serving.draining,
          logger,
          initialAccessToken: this.initialAccessToken,
          apiResources: state.apiResources,
        }),
      proxies,
      new ClientCertificates({
        proxies,
        header: config.mtls.certificateHeader,
        ownListener: config.tls !== undefined && config.mtls.caFile !== undefined,
        caFile: config.mtls.caFile,
      }),
    );
  }
}

/** The initial access token of dynamic client registration; a short one stops the start. */
function readInitialAccessToken(config: LoadedConfig): string | undefined {
  const file = config.dynamicClientRegistration.initialAccessTokenFile;
  if (!config.dynamicClientRegistration.enabled || file === undefined) return undefined;
  const token = readFileSync(file, 'utf8').trim();
  if (token.length < 32)
    throw new Error(`dynamicClientRegistration.initialAccessTokenFile ${file}: the token must be at least 32 characters`);
  return token;
}

/**
 * One authenticator and one set of client keys for every endpoint that authenticates clients,
 * with the failure throttle (which outlives a config reload when its limits stay).
 */
function clientAuthenticationOf(
  config: LoadedConfig,
  directory: ClientDirectory,
  throttle: ClientAuthThrottle,
  logger: Logger,
): ClientAuthenticationDeps {
  const clients = directory.configClients;
  // The authenticator sees store-kept clients too when there is a registry; the map is cheaper.
  const lookup = directory.registry === undefined ? clients : directory;
  const assertions = config.clientAssertions;
  // draft-ietf-oauth-rfc7523bis: `aud` is the issuer alone; the token endpoint URL only for a
  // client that allows it (docs/security.md, "Client assertions").
  return {
    issuer: config.issuer,
    authenticator: new ClientAuthenticator(lookup, Date.now, {
      issuer: config.issuer,
      tokenEndpoint: `${config.issuer}${endpointPaths.token}`,
      allowsTokenEndpointAudience: (clientId) => lookup.get(clientId)?.config.allowTokenEndpointAudience === true,
      stringAudienceOnly: (clientId) => lookup.get(clientId)?.config.profile === 'fapi2',
      maxLifetimeSeconds: assertions.maxLifetimeSeconds,
      now: Date.now,
    }),
    // API resources authenticate at introspection and are throttled the same way.
    throttle,
    ...(directory.registry === undefined ? {} : { directory }),
    clientKeys: new ClientKeys(clients, {
      cacheMs: assertions.jwksCacheSeconds * 1000,
      cooldownMs: assertions.jwksRefreshCooldownSeconds * 1000,
      timeoutMs: assertions.jwksTimeoutMs,
      logger,
    }),
  };
}
