import type { SigningKeyMaterial } from './signing_key.js';
import type { WorkerConfig } from './worker_config.js';

/** What each worker thread receives at start (Piscina `workerData`, structured clone). */
export interface WorkerBootData {
  readonly config: WorkerConfig;
  /** The first key signs; the others are only published. */
  readonly signingKeys: readonly SigningKeyMaterial[];
  /** URLs of extra grant-handler modules (default export: a GrantHandler). */
  readonly grantModules: readonly string[];
  /** URLs of extension-grant validator modules (default export: a validator class). */
  readonly validatorModules: readonly string[];
  /** URL of a custom password validator that replaces the built-in one, if any. */
  readonly passwordValidatorModule: string | null;
  readonly logLevel: string;
}
