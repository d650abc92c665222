import type { Listener } from '../http/listener.js';
import type { KeyRing } from '../keys/key_ring.js';
import type { StopOptions } from './start_options.js';
import type { ValidatorReload } from '../validators/validator_reload.js';
import type { GatewayServices } from './build_services.js';
import type { GatewayState } from './gateway_state.js';

/** What a stop closes besides what the state holds. */
export interface StopTargets {
  readonly services: GatewayServices;
  readonly validators: ValidatorReload;
  readonly keys: KeyRing;
  readonly listener: Listener;
}

/**
 * Graceful stop (docs/operations.md, "Signals and shutdown"): drain, stop listening, answer what
 * arrived (bounded by `shutdown.requestTimeoutSeconds`), then close in reverse order of start.
 */
export async function drainAndStop(state: GatewayState, targets: StopTargets, options: StopOptions | undefined): Promise<void> {
  const { logger, config } = state;
  const { serving, dispatcher } = targets.services;
  // From now on every answer closes its connection: keep-alive clients open their next
  // one, which the balancer sends elsewhere once /readyz has failed.
  serving.draining = true;
  const drainSeconds = options?.drainSeconds ?? 0;
  if (drainSeconds > 0) {
    logger.info({ drainSeconds }, 'draining: /readyz answers 503, requests are still served, each answer closes its connection');
    await delay(drainSeconds * 1000);
  }
  state.stopWatching();
  targets.keys.stop();
  state.pageSecretLoad?.stop();
  targets.validators.cancel();
  targets.listener.stopListening();
  // Every request that arrived is answered (bounded); then the connections still open,
  // idle ones, close with the app.
  const answered = Promise.all([serving.idle(), dispatcher.drain()]);
  await Promise.race([answered, delay(config.shutdown.requestTimeoutSeconds * 1000)]);
  if (serving.inFlight > 0) {
    logger.warn(
      { inFlight: serving.inFlight, requestTimeoutSeconds: config.shutdown.requestTimeoutSeconds },
      'stopping with requests unanswered after shutdown.requestTimeoutSeconds',
    );
  }
  await closeInOrder(state, targets);
  logger.info('tessera stopped');
}

async function closeInOrder(state: GatewayState, targets: StopTargets): Promise<void> {
  targets.listener.close();
  state.management?.close();
  state.clientRegistry?.stop();
  state.apiResources?.stop();
  targets.services.storeOutage.close();
  await state.events?.close();
  await state.tracing?.close();
  await targets.services.dispatcher.currentPool.destroy();
  state.storage.host?.close();
  await state.storage.store.close();
}

/** A start that failed closes what it had opened, then the store. */
export async function closeStarted(state: GatewayState): Promise<void> {
  state.stopWatching();
  state.pageSecretLoad?.stop();
  state.listener?.close();
  state.keyRing?.stop();
  state.management?.close();
  state.clientRegistry?.stop();
  state.apiResources?.stop();
  await state.events?.close();
  await state.tracing?.close();
  await state.pool?.destroy().catch(() => {});
  state.storage.host?.close();
  await state.storage.store.close().catch(() => {});
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
