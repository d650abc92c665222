import type { WorkerConfig } from '../core/worker_config.js';

/** What each worker thread receives at start (Piscina `workerData`, structured clone). */
export interface WorkerBootData {
  readonly config: WorkerConfig;
  /**
   * The shared memory of a `KeySetCell` (`key_set_cell.ts`): the published keys and which signs
   * when, updated by the gateway without restarting the thread.
   */
  readonly keySet: SharedArrayBuffer;
  /**
   * The shared memory of an `ApiResourceCell` (`api_resource_cell.ts`): the store-kept API
   * resources, updated by the gateway without restarting the thread; absent: none.
   */
  readonly apiResources?: SharedArrayBuffer;
  /** URLs of extra grant-handler modules (default export: a GrantHandler). */
  readonly grantModules: readonly string[];
  /** URLs of extension-grant validator modules (default export: a validator class). */
  readonly validatorModules: readonly string[];
  /** URL of a custom password validator that replaces the built-in one, if any. */
  readonly passwordValidatorModule: string | null;
  /** URL of the profile service module of `validatorsDir`, if any (validator_api.ts `ProfileService`). */
  readonly profileServiceModule?: string | null;
  readonly logLevel: string;
  /** Record the facts of each request (task_facts.ts) for audit events (the gateway has an event sink or hook). */
  readonly recordFacts: boolean;
  /**
   * Record when each request ran in the worker and its store commands (task_facts.ts `timing`),
   * for the gateway's trace spans (docs/operations.md, "Tracing"); implies `recordFacts`.
   */
  readonly recordTiming: boolean;
  /** Where store command latency and failures are counted (store_command_stats.ts). */
  readonly storeStats: { readonly counts: SharedArrayBuffer; readonly sums: SharedArrayBuffer };
  /** The key of the DPoP server nonces every gateway shares (dpop_nonce.ts). */
  readonly dpopNonceKey: Uint8Array;
}
