import { OAuthError } from '../../core/oauth_errors.js';

/** `error: description` of the OAuthError `fn` throws, `undefined` when it returns; any other throw propagates. */
export function oauthErrorOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof OAuthError) return `${err.error}: ${err.description}`;
    throw err;
  }
  return undefined;
}
