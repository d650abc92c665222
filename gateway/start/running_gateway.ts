import { reloadConfig, type ReloadableGateway } from './config_reload.js';
import type { RunningGateway } from './start_options.js';
import type { GatewayState } from './gateway_state.js';
import type { Listening } from './listen.js';
import type { SerialReloads } from './serial_reloads.js';
import { drainAndStop, type StopTargets } from './stop.js';

/** What the embedding code holds: the gateway's address, its reloads and its stop. */
export function runningGateway(
  state: GatewayState,
  listening: Listening,
  reloadable: ReloadableGateway,
  serial: SerialReloads,
  targets: StopTargets,
): RunningGateway {
  const { validators, keys, services } = targets;
  return {
    url: listening.url,
    port: listening.port,
    managementUrl: listening.managementUrl,
    events: services.events,
    metrics: services.metrics,
    get grantTypes() {
      return [...validators.grantTypes];
    },
    nextValidatorReload() {
      return validators.next();
    },
    get config() {
      return state.config;
    },
    reload: () => serial.run(() => reloadConfig(reloadable)),
    reloadKeys(next) {
      return keys.reload(next);
    },
    stop(stopOptions) {
      state.stopping ??= drainAndStop(state, targets, stopOptions);
      return state.stopping;
    },
  };
}
