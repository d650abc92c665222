import type { TesseraConfig } from '../../gateway/config/schema.js';
import type { SigningKeyMaterial } from '../tokens/signing_key.js';

/** What each worker thread receives at start (Piscina `workerData`, structured clone). */
export interface WorkerBootData {
  readonly config: TesseraConfig;
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
