import { randomBytes } from 'node:crypto';
import type { Piscina } from 'piscina';
import type { LoadedConfig } from '../config/load.js';
import type { AuditEvents } from '../observability/events/audit_events.js';
import { deriveDPoPNonceKey } from '../keys/dpop_nonce_key.js';
import type { KeyRing } from '../keys/key_ring.js';
import type { ValidatorModule } from '../validators/validator_loader.js';
import { startWorkerPool } from '../dispatch/worker_pool.js';
import type { GatewayState } from './gateway_state.js';
import type { GrantModules } from './load_modules.js';

/** Starts a booted worker pool on a config, serving these validators (gateway/dispatch/worker_pool.ts). */
export type PoolStarter = (config: LoadedConfig, modules: readonly ValidatorModule[]) => Promise<Piscina>;

/** What every pool the gateway starts shares: the key cell, the store, the grant modules. */
export interface PoolInputs {
  readonly keys: KeyRing;
  readonly events: AuditEvents;
  readonly grants: GrantModules;
  /** Worker threads whose heartbeat stopped: the dispatcher keeps the set, every pool's balancer avoids them. */
  readonly suspectThreads: Set<number>;
}

/**
 * The one way the gateway starts a pool: at start, on a validator reload, on a config reload and
 * once the page secret arrives. The DPoP nonce key comes from the page secret in service then.
 */
export function poolStarter(state: GatewayState, inputs: PoolInputs): PoolStarter {
  // The workers' DPoP nonce key until the page secret is loaded: no nonce is handed out or checked
  // meanwhile (the token endpoint refuses a client that needs one), so it only fills the place.
  const placeholderSecret = randomBytes(32).toString('base64url');
  return (config, modules) =>
    startWorkerPool({
      config,
      keySet: inputs.keys.cell,
      apiResources: state.apiResourceCell,
      grantModules: inputs.grants.urls,
      validatorModules: modules.filter((m) => m.kind === 'extension_grant').map((m) => m.url),
      passwordValidatorModule: modules.find((m) => m.kind === 'resource_owner_password')?.url ?? null,
      profileServiceModule: modules.find((m) => m.kind === 'profile_service')?.url ?? null,
      storeHost: state.storage.host,
      recordFacts: inputs.events.enabled,
      recordTiming: state.tracing !== undefined,
      storeStats: state.storage.statsBuffers,
      dpopNonceKey: deriveDPoPNonceKey(state.pageSecret ?? placeholderSecret),
      suspectThreads: inputs.suspectThreads,
    });
}
