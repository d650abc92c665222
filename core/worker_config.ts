/**
 * The configuration as the worker threads read it. These types are declared here, on the worker
 * side of the thread boundary, so that no worker module imports the gateway (or loads zod); the
 * gateway's zod schema (`gateway/config/schema.ts`) is checked against them at compile time, so
 * the two cannot drift apart. What each field means: the README's "Configuration reference".
 */

/** A configured client or API resource secret: `clientSecrets[]`, `apiResources[].secrets[]`. */
export interface SecretConfig {
  /** Base64(SHA-256(UTF-8 secret)), as printed by `tessera hash-secret`. */
  readonly value: string;
  readonly description?: string | undefined;
  /** ISO 8601 date or date-time after which the secret is refused. */
  readonly expiration?: string | undefined;
}

/** A client claim (`clients[].claims[]`), added to the client's tokens. */
export interface ClientClaimConfig {
  readonly type: string;
  readonly value: string;
}

/**
 * A client's public key (RFC 7517 §4), for `private_key_jwt` (`clients[].jwks`): the public
 * members only; a private or symmetric key is refused by the schema.
 */
export interface PublicJwkConfig {
  readonly kty: 'EC' | 'RSA' | 'OKP';
  readonly kid?: string | undefined;
  readonly alg?: string | undefined;
  readonly use?: string | undefined;
  readonly key_ops?: readonly string[] | undefined;
  readonly crv?: string | undefined;
  readonly x?: string | undefined;
  readonly y?: string | undefined;
  readonly n?: string | undefined;
  readonly e?: string | undefined;
  readonly x5c?: readonly string[] | undefined;
  readonly x5t?: string | undefined;
  readonly 'x5t#S256'?: string | undefined;
  readonly ext?: boolean | undefined;
}

/** The RFC 8705 §2 client authentication methods, by their registered names. */
export type TlsClientAuthMethod = 'tls_client_auth' | 'self_signed_tls_client_auth';

/** One entry of `clients`, with the schema's defaults applied. */
export interface ClientConfig {
  readonly clientId: string;
  readonly clientName?: string | undefined;
  readonly enabled: boolean;
  readonly clientSecrets: readonly SecretConfig[];
  readonly requireClientSecret: boolean;
  /** Public keys for `private_key_jwt` (RFC 7523 §2.2), inline; the gateway's. */
  readonly jwks?: { readonly keys: readonly PublicJwkConfig[] } | undefined;
  /** Where the client publishes its `private_key_jwt` keys; fetched by the gateway. */
  readonly jwksUri?: string | undefined;
  /** `private_key_jwt`: `aud` may be the token endpoint URL too, not only the issuer (the gateway's). */
  readonly allowTokenEndpointAudience: boolean;
  /**
   * RFC 8705 §2: the client authenticates with its TLS client certificate (the gateway's); absent,
   * the method follows from its secrets or keys.
   */
  readonly tokenEndpointAuthMethod?: TlsClientAuthMethod | undefined;
  /** `tls_client_auth` (RFC 8705 §2.1.2): the certificate's subject DN, as RFC 4514 writes it. */
  readonly tlsClientAuthSubjectDn?: string | undefined;
  /** `tls_client_auth`: a `dNSName` SAN the certificate must carry. */
  readonly tlsClientAuthSanDns?: string | undefined;
  /** `tls_client_auth`: a `uniformResourceIdentifier` SAN the certificate must carry. */
  readonly tlsClientAuthSanUri?: string | undefined;
  /** `tls_client_auth`: an `iPAddress` SAN the certificate must carry. */
  readonly tlsClientAuthSanIp?: string | undefined;
  /** `tls_client_auth`: an `rfc822Name` SAN the certificate must carry. */
  readonly tlsClientAuthSanEmail?: string | undefined;
  /** RFC 8705 §3: access tokens (and a public client's refresh tokens) bound to the client's certificate. */
  readonly tlsClientCertificateBoundAccessTokens: boolean;
  readonly allowedGrantTypes: readonly string[];
  readonly allowedScopes: readonly string[];
  readonly allowOfflineAccess: boolean;
  /** The consent page offers "remember my decision" (IdentityServer's `AllowRememberConsent`). */
  readonly allowRememberConsent: boolean;
  /** Seconds a remembered consent lasts; `undefined`: until revoked. */
  readonly consentLifetime?: number | undefined;
  readonly redirectUris: readonly string[];
  /** Where the end-session endpoint may send the browser after a sign-out (the gateway's). */
  readonly postLogoutRedirectUris: readonly string[];
  /** Browser origins allowed to call the token, revocation and UserInfo endpoints (CORS; the gateway's). */
  readonly allowedCorsOrigins: readonly string[];
  readonly requirePkce: boolean;
  /** Always `false`: PKCE is S256 only. */
  readonly allowPlainTextPkce: false;
  /**
   * A client profile whose rules Tessera enforces: `fapi2`, the FAPI 2.0 Security Profile
   * (docs/endpoints.md, "FAPI 2.0"). Its settings are applied when the config loads
   * (`gateway/config/client_profiles.ts`); the token endpoint checks its sender constraint.
   */
  readonly profile?: 'fapi2' | undefined;
  /** Token requests must carry a DPoP proof (RFC 9449 §5). */
  readonly requireDPoP: boolean;
  /** DPoP proofs must carry a server nonce (RFC 9449 §8); `undefined`: `dpop.requireNonce`. */
  readonly requireDPoPNonce?: boolean | undefined;
  /** The authorization endpoint takes only pushed requests from it (RFC 9126 §5; the gateway's). */
  readonly requirePushedAuthorizationRequests: boolean;
  /** Its authorization requests must be signed request objects (RFC 9101; the gateway's). */
  readonly requireSignedRequestObject: boolean;
  /** Seconds. */
  readonly accessTokenLifetime: number;
  readonly identityTokenLifetime: number;
  readonly authorizationCodeLifetime: number;
  readonly deviceCodeLifetime: number;
  /** Minimum seconds between device token polls (RFC 8628 §3.5). */
  readonly pollingInterval: number;
  readonly refreshTokenUsage: 'oneTimeOnly' | 'reUse';
  /**
   * Seconds after a `oneTimeOnly` rotation during which the old token, presented again while its
   * successor is unused, gets that successor rather than revoking the family; 0 = strict.
   */
  readonly refreshTokenReuseGraceSeconds: number;
  /**
   * Most `oneTimeOnly` rotations of one family per minute, grace-window retries included; beyond,
   * `429` (docs/configuration.md).
   */
  readonly refreshTokenRotationsPerMinute: number;
  readonly refreshTokenExpiration: 'absolute' | 'sliding';
  readonly absoluteRefreshTokenLifetime: number;
  readonly slidingRefreshTokenLifetime: number;
  /** Identity providers (users' `idp`) this client accepts; empty accepts all. */
  readonly identityProviderRestrictions: readonly string[];
  readonly claims: readonly ClientClaimConfig[];
  readonly alwaysSendClientClaims: boolean;
  /** API resource names this client is (delegation and token exchange; docs/configuration.md). */
  readonly audiences: readonly string[];
  readonly allowClientTokenExchange: boolean;
  /** Free-form settings for validators and the profile service (IdentityServer's client `Properties`). */
  readonly properties: Readonly<Record<string, string>>;
}

/** `dpop`: proof checks and server nonces (RFC 9449). */
export interface DPoPConfig {
  /** How far a proof's `iat` may be from the server's clock, either way (RFC 9449 §11.1). */
  readonly proofWindowSeconds: number;
  /** Server nonces required for clients that do not set `requireDPoPNonce` (RFC 9449 §8). */
  readonly requireNonce: boolean;
  /** Seconds between nonce changes; a nonce is accepted for one to two of them. */
  readonly nonceLifetimeSeconds: number;
}

/** One entry of `users`: the built-in password check, the login page and the device page. */
export interface UserConfig {
  readonly subjectId: string;
  readonly username: string;
  /** An argon2id or scrypt PHC string, as printed by `tessera hash-password`. */
  readonly passwordHash: string;
  readonly enabled: boolean;
  readonly tenant?: string | undefined;
  readonly idp: string;
  /** Claims of the user; a JSON config holds these kinds of claim value only. */
  readonly claims: Readonly<Record<string, string | number | boolean | readonly string[]>>;
}

/** `store`: where state that outlives a request is kept. */
export type StoreConfig =
  | { readonly type: 'memory'; readonly maxRecords: number }
  | { readonly type: 'redis'; readonly url: string; readonly keyPrefix: string; readonly commandTimeoutMs: number }
  | { readonly type: 'redis-cluster'; readonly nodes: readonly string[]; readonly keyPrefix: string; readonly commandTimeoutMs: number }
  | {
      readonly type: 'redis-sentinel';
      readonly sentinels: readonly string[];
      readonly name: string;
      readonly password?: string | undefined;
      readonly username?: string | undefined;
      readonly sentinelPassword?: string | undefined;
      readonly sentinelUsername?: string | undefined;
      readonly tls: boolean;
      readonly waitForReplicas: number;
      readonly keyPrefix: string;
      readonly commandTimeoutMs: number;
    };

/** One failure throttle of `throttling`. */
export interface ThrottleConfig {
  readonly maxFailures: number;
  readonly windowSeconds: number;
}

/** An identity resource as the workers read it: the scope name and the claims it releases. */
export interface IdentityResourceConfig {
  readonly name: string;
  readonly claims: readonly string[];
}

/** An API scope as the workers read it. */
export interface ApiScopeConfig {
  readonly name: string;
}

/** An API resource as the workers read it: its name (a token's `aud`) and the scopes reaching it. */
export interface ApiResourceConfig {
  readonly name: string;
  readonly scopes: readonly string[];
}

/**
 * What of the validated configuration the worker threads read. The gateway sends exactly this
 * (`workerConfigOf` in `gateway/config/worker_config.ts`) in each worker's boot data.
 */
export interface WorkerConfig {
  readonly issuer: string;
  readonly store: StoreConfig;
  readonly clients: readonly ClientConfig[];
  readonly users: readonly UserConfig[];
  readonly identityResources: readonly IdentityResourceConfig[];
  readonly apiScopes: readonly ApiScopeConfig[];
  readonly apiResources: readonly ApiResourceConfig[];
  readonly throttling: {
    readonly password: ThrottleConfig;
    readonly passwordPerUser: ThrottleConfig;
    readonly passwordPerAddress: ThrottleConfig;
    readonly introspectionInactive: ThrottleConfig;
  };
  /** How long a validator's `validate` may run before the request is answered 503. */
  readonly validatorTimeoutMs: number;
  readonly dpop: DPoPConfig;
}
