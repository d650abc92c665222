import type { ReloadableGateway } from './config_reload.js';
import { buildDiscoveryDocument } from '../endpoints/discovery.js';
import type { Listener } from '../http/listener.js';
import type { KeyRing } from '../keys/key_ring.js';
import type { ValidatorReload } from '../validators/validator_reload.js';
import type { GatewayRoutes } from './build_routes.js';
import type { GatewayServices } from './build_services.js';
import type { GatewayState } from './gateway_state.js';
import type { PoolStarter } from './start_pool.js';

/** What a config reload swaps in the running gateway. */
export interface ReloadTargets {
  readonly startPool: PoolStarter;
  readonly validators: ValidatorReload;
  readonly routes: GatewayRoutes;
  readonly services: GatewayServices;
  readonly listener: Listener;
  readonly keys: KeyRing;
}

/**
 * The running gateway as the config reload's steps (gateway/start/config_reload.ts) see it; the
 * throttle keeps its counts unless its limits change (`GatewayRoutes.replaceFor`).
 */
export function reloadableGateway(state: GatewayState, targets: ReloadTargets): ReloadableGateway {
  const { options, logger } = state;
  const { validators, routes, listener } = targets;
  const { serving, dispatcher } = targets.services;
  return {
    logger,
    current: () => state.config,
    unavailable: () =>
      serving.draining
        ? 'the gateway is stopping'
        : options.reloadConfig === undefined
          ? 'the gateway was not started from a config file: there is nothing to read again'
          : undefined,
    read: async () => {
      if (options.reloadConfig === undefined) throw new Error('no config file to read again');
      return options.reloadConfig([...validators.grantTypes]);
    },
    startPool: (next) => targets.startPool(next, validators.modules),
    reloadTls: async (next) => {
      if (next.tls !== undefined && listener.secure) await listener.reloadTls({ ...next.tls, clientCaFile: next.mtls.caFile });
    },
    replaceRoutes: (next) => routes.replaceFor(next),
    commit: (next, nextPool) => {
      state.config = next;
      const replaced = dispatcher.replacePool(nextPool);
      state.discoveryBody = buildDiscoveryDocument(state.config, [...validators.grantTypes], targets.keys.set.keys);
      logger.level = state.config.logLevel;
      return replaced;
    },
  };
}
