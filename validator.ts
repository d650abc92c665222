/**
 * The validator API: everything an extension-grant or password validator or a profile service imports
 * (validators/README.md).
 *
 * @example
 * ```ts
 * import { GrantValidationResult, TokenRequestErrors, type ExtensionGrantValidator } from 'tessera/validator';
 * ```
 *
 * This entry holds only the contract between validators and Tessera, so a validator loaded in a
 * worker thread never loads the HTTP server, the config schema or the CLI. The package root
 * (`'tessera'`) re-exports it as well, so validators that import from there keep working.
 */
export {
  GrantValidationResult,
  TokenRequestErrors,
  authenticationMethods,
  type ApiResource,
  type Claim,
  type ClaimValue,
  type ExtensionGrantValidationContext,
  type ExtensionGrantValidator,
  type ExtensionGrantValidatorClass,
  type IsActiveContext,
  type PasswordValidationRequest,
  type ProfileDataCaller,
  type ProfileDataRequestContext,
  type ProfileService,
  type ProfileServiceClass,
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
} from './core/validator_api.js';
