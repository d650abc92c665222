import type { WorkerConfig } from '../worker_config.js';
import { OAuthError, OAuthErrors } from '../oauth_errors.js';
import type { RegisteredClient } from '../client_model.js';

export const offlineAccessScope = 'offline_access';

/** What a grant may carry: client-only grants get neither identity scopes nor refresh tokens. */
export interface ScopePolicy {
  identityScopes: boolean;
  offlineAccess: boolean;
}

export const clientOnlyPolicy: ScopePolicy = { identityScopes: false, offlineAccess: false };
export const userPolicy: ScopePolicy = { identityScopes: true, offlineAccess: true };

/** The outcome of scope validation, ready to put in a token. */
export interface GrantedScopes {
  /** In a stable order: the client's allowedScopes order. */
  readonly scopes: readonly string[];
  /** Space-separated, for the `scope` claim and response member. */
  readonly scope: string;
  readonly apiScopes: readonly string[];
  readonly identityScopes: readonly string[];
  readonly offlineAccess: boolean;
  /** `aud` of an access token: the API resources of the granted API scopes. */
  readonly audiences: readonly string[];
}

/**
 * Scope rules of docs/endpoints.md ("Scope"), built once per thread from the config. Results for an omitted `scope`
 * are cached per client and policy, since that is the common request.
 */
export class ScopeRules {
  private readonly identity = new Set<string>();
  private readonly api = new Set<string>();
  private readonly audiencesByScope = new Map<string, string[]>();
  private defaults = new WeakMap<RegisteredClient, Map<ScopePolicy, GrantedScopes>>();
  // Clients send the same few scope strings again and again; a valid one is resolved once.
  private resolved = new WeakMap<RegisteredClient, Map<ScopePolicy, Map<string, GrantedScopes>>>();
  // Granted scopes are themselves cached, so their narrowings to the same targets are too.
  private narrowed = new WeakMap<GrantedScopes, Map<string, GrantedScopes>>();
  private readonly config: Pick<WorkerConfig, 'identityResources' | 'apiScopes' | 'apiResources'>;
  private grantableByClient = new WeakMap<RegisteredClient, Map<ScopePolicy, readonly string[]>>();

  constructor(config: Pick<WorkerConfig, 'identityResources' | 'apiScopes' | 'apiResources'>) {
    this.config = config;
    this.fill([]);
  }

  /**
   * The config's resources and scopes, and now also the store-kept API resources `stored`
   * (docs/configuration.md, `clientRegistry`): each scope one of them lists that is not an
   * identity scope counts as an API scope while it is there. Every cached result is dropped.
   */
  useStoredResources(stored: WorkerConfig['apiResources']): void {
    this.identity.clear();
    this.api.clear();
    this.audiencesByScope.clear();
    this.defaults = new WeakMap();
    this.resolved = new WeakMap();
    this.narrowed = new WeakMap();
    this.grantableByClient = new WeakMap();
    this.fill(stored);
  }

  private fill(stored: WorkerConfig['apiResources']): void {
    const config = this.config;
    for (const r of config.identityResources) this.identity.add(r.name);
    for (const s of config.apiScopes) this.api.add(s.name);
    for (const resource of stored) {
      for (const scope of resource.scopes) if (!this.identity.has(scope) && scope !== offlineAccessScope) this.api.add(scope);
    }
    for (const resource of [...config.apiResources, ...stored]) {
      for (const scope of resource.scopes) {
        const list = this.audiencesByScope.get(scope);
        if (list === undefined) this.audiencesByScope.set(scope, [resource.name]);
        else if (!list.includes(resource.name)) list.push(resource.name);
      }
    }
  }

  /** Every registered scope, for discovery's `scopes_supported`. */
  supportedScopes(): string[] {
    return [...this.identity, ...this.api, offlineAccessScope];
  }

  isIdentityScope(scope: string): boolean {
    return this.identity.has(scope);
  }

  /**
   * Validates a requested `scope` parameter (or its absence) for a client.
   * @throws OAuthError `invalid_scope`
   */
  resolve(client: RegisteredClient, requested: string | undefined, policy: ScopePolicy): GrantedScopes {
    if (requested === undefined) return this.defaultsFor(client, policy);
    let byPolicy = this.resolved.get(client);
    if (byPolicy === undefined) this.resolved.set(client, (byPolicy = new Map()));
    let byScope = byPolicy.get(policy);
    if (byScope === undefined) byPolicy.set(policy, (byScope = new Map()));
    const known = byScope.get(requested);
    if (known !== undefined) return known;
    const granted = this.resolveUncached(client, requested, policy);
    if (byScope.size >= 64) byScope.clear();
    byScope.set(requested, granted);
    return granted;
  }

  /**
   * Every scope {@link resolve} grants `client` under `policy` when asked for it: a `scope` made of
   * these alone resolves without an error. What a refresh's one-trip store call checks a stored
   * grant against (docs/storage.md, "One round trip per redemption").
   */
  grantable(client: RegisteredClient, policy: ScopePolicy): readonly string[] {
    let byPolicy = this.grantableByClient.get(client);
    if (byPolicy === undefined) this.grantableByClient.set(client, (byPolicy = new Map()));
    let scopes = byPolicy.get(policy);
    if (scopes === undefined) {
      scopes = Object.freeze(
        client.config.allowedScopes.filter(
          (s) =>
            this.isKnown(s) &&
            client.scopes.has(s) &&
            this.fitsPolicy(s, policy) &&
            (s !== offlineAccessScope || client.config.allowOfflineAccess),
        ),
      );
      byPolicy.set(policy, scopes);
    }
    return scopes;
  }

  private resolveUncached(client: RegisteredClient, requested: string, policy: ScopePolicy): GrantedScopes {
    const wanted = new Set<string>();
    for (const scope of requested.split(' ')) {
      if (scope.length === 0) continue;
      if (!this.isKnown(scope)) throw new OAuthError(OAuthErrors.scopeNotRegistered);
      if (!client.scopes.has(scope)) throw new OAuthError(OAuthErrors.scopeNotAllowedForClient);
      if (!this.fitsPolicy(scope, policy)) throw new OAuthError(OAuthErrors.scopeNotAllowedForGrantType);
      if (scope === offlineAccessScope && !client.config.allowOfflineAccess) {
        throw new OAuthError(OAuthErrors.offlineAccessNotAllowed);
      }
      wanted.add(scope);
    }
    if (wanted.size === 0) return this.defaultsFor(client, policy);
    // Keep the client's configured order so equal requests give byte-identical tokens.
    return this.grant(client.config.allowedScopes.filter((s) => wanted.has(s)));
  }

  private defaultsFor(client: RegisteredClient, policy: ScopePolicy): GrantedScopes {
    let byPolicy = this.defaults.get(client);
    if (byPolicy === undefined) this.defaults.set(client, (byPolicy = new Map()));
    let granted = byPolicy.get(policy);
    if (granted === undefined) {
      granted = this.grant(
        client.config.allowedScopes.filter(
          (s) => this.isKnown(s) && this.fitsPolicy(s, policy) && (s !== offlineAccessScope || client.config.allowOfflineAccess),
        ),
      );
      byPolicy.set(policy, granted);
    }
    if (granted.scopes.length === 0) throw new OAuthError(OAuthErrors.noScopeAllowed);
    return granted;
  }

  /**
   * RFC 8707 §2: narrows `granted` to the API resources `targets` (names of `apiResources`). `aud`
   * becomes those resources, and the API scopes only those reaching one of them; identity scopes
   * and `offline_access` stay. With `strict` (targets the request named), each target must be reached
   * by a granted scope; otherwise (targets a grant was bound to, when a refresh narrowed its scope)
   * the targets no scope reaches any more are left out.
   * @throws OAuthError `invalid_target`
   */
  forResources(granted: GrantedScopes, targets: readonly string[], strict: boolean): GrantedScopes {
    const cacheKey = `${strict ? 's' : 'l'} ${targets.join(' ')}`;
    let byTargets = this.narrowed.get(granted);
    const known = byTargets?.get(cacheKey);
    if (known !== undefined) return known;
    const wanted = new Set(targets);
    if (strict) for (const target of wanted) if (!granted.audiences.includes(target)) throw new OAuthError(OAuthErrors.resourceNotAllowed);
    const reaches = (scope: string) => (this.audiencesByScope.get(scope) ?? []).some((aud) => wanted.has(aud));
    const scopes = granted.scopes.filter((s) => !this.api.has(s) || reaches(s));
    const result = this.grant(
      scopes,
      granted.audiences.filter((aud) => wanted.has(aud)),
    );
    if (byTargets === undefined) this.narrowed.set(granted, (byTargets = new Map()));
    if (byTargets.size >= 64) byTargets.clear();
    byTargets.set(cacheKey, result);
    return result;
  }

  private grant(scopes: string[], only?: readonly string[]): GrantedScopes {
    const apiScopes = scopes.filter((s) => this.api.has(s));
    const audiences: string[] = [];
    if (only !== undefined) audiences.push(...only);
    else
      for (const scope of apiScopes) {
        for (const aud of this.audiencesByScope.get(scope) ?? []) if (!audiences.includes(aud)) audiences.push(aud);
      }
    return Object.freeze({
      scopes: Object.freeze(scopes),
      scope: scopes.join(' '),
      apiScopes: Object.freeze(apiScopes),
      identityScopes: Object.freeze(scopes.filter((s) => this.identity.has(s))),
      offlineAccess: scopes.includes(offlineAccessScope),
      audiences: Object.freeze(audiences),
    });
  }

  private isKnown(scope: string): boolean {
    return this.api.has(scope) || this.identity.has(scope) || scope === offlineAccessScope;
  }

  private fitsPolicy(scope: string, policy: ScopePolicy): boolean {
    if (scope === offlineAccessScope) return policy.offlineAccess;
    if (this.identity.has(scope)) return policy.identityScopes;
    return true;
  }
}
