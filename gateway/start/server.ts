import { adoptPageSecretWhenLoaded } from './adopt_page_secret.js';
import { GatewayRoutes } from './build_routes.js';
import { openClientRegistry } from './open_client_registry.js';
import { buildServices } from './build_services.js';
import { reloadableGateway } from './config_reloads.js';
import { newGatewayState } from './gateway_state.js';
import { listen, logListening } from './listen.js';
import { loadGrantModules, loadValidators } from './load_modules.js';
import { openEvents } from './open_events.js';
import { openStore } from './open_store.js';
import { runningGateway } from './running_gateway.js';
import { SerialReloads } from './serial_reloads.js';
import type { RunningGateway, StartOptions } from './start_options.js';
import { startKeys } from './start_keys.js';
import { poolStarter } from './start_pool.js';
import { closeStarted } from './stop.js';
import { startValidatorReload, watchValidatorFiles } from './validator_reloads.js';

export type { ReloadResult } from './config_reload.js';
export type { ProcessSlot, RunningGateway, StartOptions, StopOptions } from './start_options.js';

/**
 * Starts one gateway: store, signing keys, grant and validator modules, the worker pool, the
 * routes, then the listener (docs/architecture.md "Start-up", docs/operations.md "Running").
 * Each step is a file of gateway/start/; a step that fails closes what the ones before opened.
 */
export async function startGateway(options: StartOptions): Promise<RunningGateway> {
  const state = newGatewayState(options, openStore);
  try {
    const events = await openEvents(state);
    const { keys, pageSecretLoad } = await startKeys(state, events);
    const grants = await loadGrantModules(options);
    const suspectThreads = new Set<number>();
    const startPool = poolStarter(state, { keys, events, grants, suspectThreads });
    const loaded = await loadValidators(options, grants);
    state.pool = await startPool(state.config, loaded.modules);
    const services = buildServices(state, state.pool, keys, events, suspectThreads);
    const validators = startValidatorReload(state, loaded, grants, startPool, services, keys);
    await openClientRegistry(state, services.metrics);
    const routes = new GatewayRoutes(state, keys, services, validators);
    const serial = new SerialReloads();
    adoptPageSecretWhenLoaded(state, pageSecretLoad, { startPool, validators, routes, services, serial });
    watchValidatorFiles(state, validators, serial);
    const listening = await listen(state, services.metrics, routes, {
      events,
      grantTypes: () => validators.grantTypes,
      checkAccessToken: (token) => services.dispatcher.call({ kind: 'access_token', params: { token } }),
    });
    const { listener } = listening;
    const reloadable = reloadableGateway(state, { startPool, validators, routes, services, listener, keys });
    logListening(state, listening, validators);
    return runningGateway(state, listening, reloadable, serial, { services, validators, keys, listener });
  } catch (err) {
    await closeStarted(state);
    throw err;
  }
}
