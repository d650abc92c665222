/**
 * Tessera's public API: what validator authors and embedding code import from `'tessera'`.
 */
export {
  GrantValidationResult,
  TokenRequestErrors,
  type ApiResource,
  type Claim,
  type ClaimValue,
  type ExtensionGrantValidationContext,
  type ExtensionGrantValidator,
  type ExtensionGrantValidatorClass,
  type PasswordValidationRequest,
  type ResourceOwnerPasswordValidationContext,
  type ResourceOwnerPasswordValidator,
  type ResourceOwnerPasswordValidatorClass,
  type RawParameters,
  type SuccessOptions,
  type TokenRequestError,
  type TokenValidationResult,
  type TokenValidator,
  type ValidatedClient,
  type ValidatedTokenRequest,
  type ValidatorLogger,
  type ValidatorServices,
} from './workers/protocol/validator_api.js';
export { createTessera, TesseraBuilder } from './gateway/service_builder.js';
export type { RunningGateway } from './gateway/server.js';
export type { TesseraConfig } from './gateway/config/schema.js';
export type { ClientConfig, UserConfig } from './workers/protocol/worker_config.js';
