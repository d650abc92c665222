import { buildDiscoveryDocument } from '../endpoints/discovery.js';
import type { KeyRing } from '../keys/key_ring.js';
import { ValidatorReload } from '../validators/validator_reload.js';
import { watchValidators } from '../validators/validator_watcher.js';
import type { GatewayServices } from './build_services.js';
import type { GatewayState } from './gateway_state.js';
import type { GrantModules, LoadedValidators } from './load_modules.js';
import type { SerialReloads } from './serial_reloads.js';
import type { PoolStarter } from './start_pool.js';

/**
 * The validators in service and their hot reload (validators/README.md, "Hot reload"): each
 * reload that takes effect rebuilds the discovery document and is an audit event.
 */
export function startValidatorReload(
  state: GatewayState,
  validators: LoadedValidators,
  grants: GrantModules,
  startPool: PoolStarter,
  services: GatewayServices,
  keys: KeyRing,
): ValidatorReload {
  const { logger } = state;
  const { dispatcher, events } = services;
  const reload = new ValidatorReload(
    {
      sources: validators.sources,
      reservedGrantTypes: grants.reservedGrantTypes,
      internalGrantTypes: grants.internalGrantTypes,
      startPool: (modules) => startPool(state.config, modules),
      replacePool: (next) => dispatcher.replacePool(next),
      onReloaded: (grantTypes, change) => {
        state.discoveryBody = buildDiscoveryDocument(state.config, [...grantTypes], keys.set.keys);
        events.emit({
          name: 'ValidatorReloaded',
          outcome: 'success',
          details: { added: change.added, removed: change.removed, changed: change.changed },
        });
      },
      onRefused: (reason) => events.emit({ name: 'ValidatorReloaded', outcome: 'failure', error: reason }),
      logger,
    },
    validators.modules,
  );
  state.discoveryBody = buildDiscoveryDocument(state.config, [...reload.grantTypes], keys.set.keys);
  return reload;
}

/** Reloads the validators when files in `validatorsDir` (or their data files) change, unless turned off. */
export function watchValidatorFiles(state: GatewayState, reload: ValidatorReload, serial: SerialReloads): void {
  if (state.options.watchValidators === false) return;
  state.stopWatching = watchValidators(
    state.config.validatorsDir,
    () => serial.run(reload.reload),
    state.logger,
    () => reload.modules.flatMap((module) => module.dataFiles),
  );
}
