import type { PageSecretLoad } from '../keys/page_secret.js';
import type { ValidatorReload } from '../validators/validator_reload.js';
import type { GatewayRoutes } from './build_routes.js';
import type { GatewayServices } from './build_services.js';
import type { GatewayState } from './gateway_state.js';
import type { SerialReloads } from './serial_reloads.js';
import type { PoolStarter } from './start_pool.js';

/** What taking up the page secret late swaps: the pool (DPoP nonce key) and the routes (the pages). */
export interface PageSecretAdoption {
  readonly startPool: PoolStarter;
  readonly validators: ValidatorReload;
  readonly routes: GatewayRoutes;
  readonly services: GatewayServices;
  readonly serial: SerialReloads;
}

/**
 * When the gateway started without the page secret (the store did not answer; docs/operations.md,
 * "Starting without the store"), takes it up once it is loaded, trying again every second when
 * the new worker threads do not start.
 */
export function adoptPageSecretWhenLoaded(state: GatewayState, load: PageSecretLoad, adoption: PageSecretAdoption): void {
  if (state.pageSecret !== undefined) return;
  const keepTrying = (secret: string): void => {
    adoption.serial
      .run(() => adoptPageSecret(state, secret, adoption))
      .catch((err: unknown) => {
        state.logger.error({ err }, 'could not start the worker threads with the page secret; trying again in a second');
        state.pageSecret = undefined;
        setTimeout(() => keepTrying(secret), 1000).unref();
      });
  };
  void load.loaded.then(keepTrying);
}

/**
 * The page secret once the store answers: a pool whose workers have the DPoP nonce key, and
 * routes that serve the pages, switched in as on a config reload.
 */
async function adoptPageSecret(state: GatewayState, secret: string, adoption: PageSecretAdoption): Promise<void> {
  const { serving, dispatcher } = adoption.services;
  if (serving.draining) return;
  state.pageSecret = secret;
  const next = await adoption.startPool(state.config, adoption.validators.modules);
  if (serving.draining) {
    await next.destroy();
    return;
  }
  adoption.routes.rebuild();
  state.logger.info('the store answers: page secret loaded, the pages and DPoP nonces are served');
  await dispatcher.replacePool(next);
}
