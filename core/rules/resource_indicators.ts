/**
 * Resource indicators (RFC 8707): the `resource` parameter names the API resources an access token
 * is for, and so its audience. The resources of a grant are fixed where the grant is made (the
 * authorization request, the device authorization request, the password or client credentials
 * token request); a code redemption or a refresh may narrow to some of them (RFC 8707 §2.2), never
 * widen. Without `resource` anywhere, the audience is every resource of the granted scopes.
 */
import { OAuthError, OAuthErrors } from '../oauth_errors.js';
import type { GrantedScopes, ScopeRules } from './scope_rules.js';

// RFC 3986 §3: a scheme, a colon, and no fragment (RFC 8707 §2). Spaces cannot occur in a URI.
const absoluteUriWithoutFragment = /^[A-Za-z][A-Za-z0-9+.-]*:[^#\s]*$/;

/**
 * The request's `resource` values, in order without repeats; `undefined` when it names none.
 * Repeated values arrive joined by a space (gateway/http/form_parser.ts).
 * @throws OAuthError `invalid_target` for a value that is not an absolute URI without a fragment
 */
export function requestedResources(params: Readonly<Record<string, string>>): readonly string[] | undefined {
  const raw = params.resource;
  if (raw === undefined) return undefined;
  const names = raw.split(' ');
  for (const name of names) if (!absoluteUriWithoutFragment.test(name)) throw new OAuthError(OAuthErrors.resourceMalformed);
  return [...new Set(names)];
}

/**
 * The scopes and audience of one access token: `granted` narrowed to the resources this request
 * names (which must be among `bound`, the grant's resources, when it has some), or else to
 * `bound`; `granted` itself when neither names any.
 * @throws OAuthError `invalid_target`
 */
export function selectResources(
  rules: ScopeRules,
  granted: GrantedScopes,
  requested: readonly string[] | undefined,
  bound: readonly string[] | undefined,
): GrantedScopes {
  if (requested === undefined) return bound === undefined ? granted : rules.forResources(granted, bound, false);
  if (bound !== undefined) for (const name of requested) if (!bound.includes(name)) throw new OAuthError(OAuthErrors.resourceExceedsGrant);
  return rules.forResources(granted, requested, true);
}
