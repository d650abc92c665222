/**
 * The scope and audience of a token request, in one place for every grant and for the requests
 * that make a grant on the gateway (the authorization and device authorization requests): what
 * the `scope` parameter asks under the scope rules (RFC 6749 §3.3), narrowed to the API resources
 * the `resource` parameter names (RFC 8707 §2).
 */
import type { RegisteredClient } from '../client_model.js';
import { OAuthError, OAuthErrors } from '../oauth_errors.js';
import { requestedResources, selectResources } from './resource_indicators.js';
import { userPolicy, type GrantedScopes, type ScopePolicy, type ScopeRules } from './scope_rules.js';

/** A request's form parameters (the workers' `FormParams`), as every rule here reads them. */
type FormParams = Readonly<Record<string, string>>;

/** What a request that makes a grant asks for: its scopes, and the resources it names. */
export interface RequestedGrant {
  readonly scopes: GrantedScopes;
  /** The `resource` values, which bind the grant (RFC 8707 §2.2); `undefined` when it names none. */
  readonly resources: readonly string[] | undefined;
}

/**
 * A request that makes a grant (client credentials, password, the authorization and device
 * authorization requests): its `scope` under `policy`, narrowed to its `resource` values.
 * @throws OAuthError `invalid_scope`, `invalid_target`
 */
export function narrowRequestedGrant(rules: ScopeRules, client: RegisteredClient, params: FormParams, policy: ScopePolicy): RequestedGrant {
  const resources = requestedResources(params);
  return { scopes: selectResources(rules, rules.resolve(client, params.scope, policy), resources, undefined), resources };
}

/** A grant made earlier, as its record keeps it (authorization code, device code, refresh token). */
export interface StoredGrant {
  readonly scopes: readonly string[];
  readonly resources?: readonly string[] | undefined;
}

/**
 * Whether the request's `scope` parameter narrows a stored grant: a refresh's does (RFC 6749 §6);
 * a code or device code redemption has none (RFC 6749 §4.1.3, RFC 8628 §3.4) and takes the grant's.
 */
export type ScopeParameter = 'narrows' | 'ignored';

/** The part of a grant's tokens (workers/grants/token_grant.ts) the narrowing decides. */
export interface NarrowedGrant {
  scopes: GrantedScopes;
  /** RFC 8707 §2.2: the grant a refresh token stays bound to when `resource` narrowed the access token. */
  bound?: { readonly scopes: readonly string[]; readonly resources?: readonly string[] | undefined };
}

/**
 * A token request that redeems or refreshes a grant made earlier: less than was granted, never
 * more, fewer scopes (with `narrows`) and fewer resources (RFC 8707 §2.2); with `bound`, the whole
 * grant a refresh token issued now stays bound to, when resources narrowed its access token.
 * @throws OAuthError `invalid_scope` (`scopeExceedsGrant`), `invalid_target`
 */
export function narrowStoredGrant(
  rules: ScopeRules,
  client: RegisteredClient,
  stored: StoredGrant,
  params: FormParams,
  scopeParameter: ScopeParameter,
): NarrowedGrant {
  const requested = requestedResources(params);
  const wanted = scopeParameter === 'narrows' ? wantedWithin(stored, params.scope) : undefined;
  // A refresh that asks for fewer scopes keeps its record's grant: nothing to bind.
  if (wanted !== undefined)
    return { scopes: selectResources(rules, rules.resolve(client, wanted, userPolicy), requested, stored.resources) };
  const granted = rules.resolve(client, stored.scopes.join(' '), userPolicy);
  const scopes = selectResources(rules, granted, requested, stored.resources);
  if (requested === undefined && stored.resources === undefined) return { scopes };
  return { scopes, bound: { scopes: granted.scopes, resources: stored.resources } };
}

/**
 * The scopes a refresh asks for, each one granted before; `undefined` for an omitted or empty
 * `scope`, which means the original grant, never the client's defaults.
 */
function wantedWithin(stored: StoredGrant, scope: string | undefined): string | undefined {
  const wanted = scope?.split(' ').filter((s) => s.length > 0) ?? [];
  if (wanted.length === 0) return undefined;
  for (const s of wanted) if (!stored.scopes.includes(s)) throw new OAuthError(OAuthErrors.scopeExceedsGrant);
  return wanted.join(' ');
}
