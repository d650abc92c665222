import type { TokenValidationResult } from '../../core/validator_api.js';

/**
 * Results of {@link AccessTokenValidator.validateAccessToken} that succeeded, as Tessera built
 * them (frozen). A validator may hand one back as `subjectToken` so that the new token keeps the
 * user's sign-in; only a result from this set is believed, so a validator cannot make up a sign-in
 * (validators/README.md). Not exported to validators: they cannot add to it.
 */
export const validatedTokens = new WeakSet<TokenValidationResult>();
