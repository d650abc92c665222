/**
 * The config file's schema (README, "Configuration reference"). Validated once at start; `config/tessera.schema.json` is
 * generated from it (`npm run schema`) so editors can check config files too.
 */
import { isIP } from 'node:net';
import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { z } from 'zod';
import { signingAlgorithms } from '../../core/signing_key.js';
import { parseCidr } from '../http/trusted_proxies.js';
import { durationSchema } from './duration.js';
import type { ClientConfig, DPoPConfig, SecretConfig, StoreConfig, UserConfig, WorkerConfig } from '../../core/worker_config.js';

/** Grant types shipped as validators in `validators/`; known to config validation by name. */
export const shippedExtensionGrantTypes = ['delegation', 'urn:ietf:params:oauth:grant-type:token-exchange'] as const;

const positiveSeconds = z.number().int().positive();
const nonEmpty = z.string().min(1, { error: 'must not be empty' });

const secretSchema = z.strictObject({
  /** Base64(SHA-256(UTF-8 secret)), as printed by `tessera hash-secret`. */
  value: z.string().regex(/^[A-Za-z0-9+/]{43}=$/, {
    error: 'must be Base64(SHA-256(secret)) as printed by "tessera hash-secret"',
  }),
  description: z.string().optional(),
  expiration: z.union([z.iso.datetime({ offset: true }), z.iso.date()], { error: 'must be an ISO 8601 date or date-time' }).optional(),
});

const claimSchema = z.strictObject({ type: nonEmpty, value: z.string() });

// RFC 7517 §4, RFC 7518 §6: the public members of an EC, RSA or OKP key. Strict, so a private
// member (`d`, `p`, …) or a symmetric key is refused by name; public keys only.
const publicJwkSchema = z
  .strictObject({
    kty: z.enum(['EC', 'RSA', 'OKP'], { error: 'must be "EC", "RSA" or "OKP" (public keys only)' }),
    kid: z.string().optional(),
    alg: z.string().optional(),
    use: z.string().optional(),
    key_ops: z.array(z.string()).optional(),
    crv: z.string().optional(),
    x: z.string().optional(),
    y: z.string().optional(),
    n: z.string().optional(),
    e: z.string().optional(),
    x5c: z.array(z.string()).optional(),
    x5t: z.string().optional(),
    'x5t#S256': z.string().optional(),
    ext: z.boolean().optional(),
  })
  .refine((jwk) => importsAsPublicKey(jwk), { error: 'is not a usable public key' });

function importsAsPublicKey(jwk: Record<string, unknown>): boolean {
  try {
    const key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
    // RFC 7518 §3.3: RSA keys of 2048 bits or more.
    return key.asymmetricKeyType !== 'rsa' || (key.asymmetricKeyDetails?.modulusLength ?? 0) >= 2048;
  } catch {
    return false;
  }
}

export const clientSchema = z.strictObject({
  clientId: nonEmpty.describe('Unique client identifier (the client_id parameter).'),
  clientName: z.string().optional().describe('Human-readable name shown on consent and device pages.'),
  enabled: z.boolean().default(true).describe('A disabled client is rejected as invalid_client.'),
  clientSecrets: z
    .array(secretSchema)
    .default([])
    .describe('Stored secrets: Base64(SHA-256(secret)) as printed by "tessera hash-secret". Several allow roll-over.'),
  requireClientSecret: z
    .boolean()
    .default(true)
    .describe('false makes this a public client (no secret; authorization_code then relies on PKCE).'),
  jwks: z
    .strictObject({ keys: z.array(publicJwkSchema).min(1, { error: 'must list at least one key' }) })
    .optional()
    .describe('Public keys (a JWK Set) for private_key_jwt client authentication (RFC 7523); the client then has no secret.'),
  jwksUri: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .optional()
    .describe('Where the client publishes its private_key_jwt keys (a JWK Set), fetched and cached by the gateway; instead of jwks.'),
  allowTokenEndpointAudience: z
    .boolean()
    .default(false)
    .describe(
      'Compatibility: private_key_jwt assertions may carry the token endpoint URL as aud, not only the issuer (which draft-ietf-oauth-rfc7523bis requires). For clients not yet updated.',
    ),
  tokenEndpointAuthMethod: z
    .enum(['tls_client_auth', 'self_signed_tls_client_auth'])
    .optional()
    .describe(
      "Mutual TLS client authentication (RFC 8705 §2): tls_client_auth (a certificate from mtls.caFile naming the client by one tlsClientAuth* value) or self_signed_tls_client_auth (a certificate whose key is in jwks). Absent: client_secret_*, private_key_jwt or none, from the client's secrets and keys.",
    ),
  tlsClientAuthSubjectDn: nonEmpty
    .optional()
    .describe(
      'tls_client_auth: the subject DN of the client\'s certificate, as RFC 4514 writes it (last RDN first), e.g. "CN=client1,O=Acme".',
    ),
  tlsClientAuthSanDns: nonEmpty.optional().describe("tls_client_auth: a dNSName the certificate's subjectAltName must carry."),
  tlsClientAuthSanUri: nonEmpty.optional().describe("tls_client_auth: a URI the certificate's subjectAltName must carry."),
  tlsClientAuthSanIp: z
    .string()
    .refine((ip) => isIP(ip) !== 0, { error: 'must be an IPv4 or IPv6 address' })
    .optional()
    .describe("tls_client_auth: an IP address the certificate's subjectAltName must carry."),
  tlsClientAuthSanEmail: nonEmpty
    .optional()
    .describe("tls_client_auth: an rfc822Name (e-mail) the certificate's subjectAltName must carry."),
  tlsClientCertificateBoundAccessTokens: z
    .boolean()
    .default(false)
    .describe(
      "Binds access tokens (cnf.x5t#S256), and a public client's refresh tokens, to the TLS client certificate of the token request (RFC 8705 §3); the client must present one.",
    ),
  // Grant names are checked in load.ts against the built-in, shipped and validator-registered
  // grants (the last are only known once validators load); here they must be non-empty.
  allowedGrantTypes: z
    .array(nonEmpty)
    .min(1, { error: 'must list at least one grant type' })
    .describe('Grant types this client may use: built-in, "delegation", token-exchange or a validator\'s grant type.'),
  allowedScopes: z
    .array(nonEmpty)
    .default([])
    .describe('Scopes this client may request: identity resources, API scopes and offline_access.'),
  allowOfflineAccess: z.boolean().default(false).describe('Allows the offline_access scope (refresh tokens).'),
  allowRememberConsent: z
    .boolean()
    .default(true)
    .describe('The consent page offers "remember my decision"; a remembered consent skips the page until it expires or is revoked.'),
  consentLifetime: positiveSeconds
    .optional()
    .describe('Seconds a remembered consent lasts; absent: until the user (or an operator) revokes it.'),
  audiences: z
    .array(nonEmpty)
    .default([])
    .describe('API resource names this client is: delegation and token exchange accept only subject tokens whose aud names one of them.'),
  allowClientTokenExchange: z
    .boolean()
    .default(false)
    .describe('Token exchange may take a client-only token (no user) as its subject token.'),
  // RFC 6749 §3.1.2: a redirection endpoint URI is absolute and MUST NOT include a fragment.
  redirectUris: z
    .array(
      z.url({ error: 'must be an absolute URL' }).refine((uri) => !uri.includes('#'), {
        error: 'must not contain a fragment (RFC 6749 §3.1.2)',
      }),
    )
    .default([])
    .describe('Exact redirect URIs for the authorization code flow.'),
  postLogoutRedirectUris: z
    .array(
      z.url({ error: 'must be an absolute URL' }).refine((uri) => !uri.includes('#'), {
        error: 'must not contain a fragment',
      }),
    )
    .default([])
    .describe('Exact URIs the end-session endpoint may send the browser back to after a sign-out (OIDC RP-Initiated Logout).'),
  allowedCorsOrigins: z
    .array(
      // abort: the origin check below parses the URL, so it must not run on one that is not.
      z
        .url({ protocol: /^https?$/, error: 'must be an http(s) origin', abort: true })
        .refine((origin) => new URL(origin).origin === origin, {
          error: 'must be an origin: scheme, host and port only, no path or trailing "/"',
        }),
    )
    .default([])
    .describe(
      'Browser origins (https://app.example) whose pages may call the token, revocation and UserInfo endpoints, discovery and JWKS (CORS).',
    ),
  requirePkce: z.boolean().default(true).describe('Requires PKCE (S256) on the authorization code flow.'),
  allowPlainTextPkce: z.literal(false, { error: 'plain PKCE is not supported; S256 only' }).default(false),
  profile: z
    .enum(['fapi2'], { error: 'must be "fapi2" (the only client profile)' })
    .optional()
    .describe(
      'fapi2: the FAPI 2.0 Security Profile for this client: pushed authorization requests, PKCE S256, sender-constrained tokens (DPoP or mTLS), private_key_jwt or mTLS authentication, codes of at most 60 s, no password grant (docs/endpoints.md, "FAPI 2.0").',
    ),
  requireDPoP: z
    .boolean()
    .default(false)
    .describe('Token requests must carry a DPoP proof (RFC 9449): every access token of this client is sender-constrained.'),
  requireDPoPNonce: z
    .boolean()
    .optional()
    .describe('DPoP proofs at the token endpoint must carry a server nonce (RFC 9449 §8); absent: dpop.requireNonce.'),
  requirePushedAuthorizationRequests: z
    .boolean()
    .default(false)
    .describe("The authorization endpoint takes this client's requests only through /connect/par (RFC 9126 §5)."),
  requireSignedRequestObject: z
    .boolean()
    .default(false)
    .describe("This client's authorization requests must be a signed request object (RFC 9101), at /connect/authorize or /connect/par."),
  accessTokenLifetime: positiveSeconds.default(3600).describe('Access token lifetime in seconds.'),
  identityTokenLifetime: positiveSeconds.default(300).describe('ID token lifetime in seconds.'),
  authorizationCodeLifetime: positiveSeconds.default(300).describe('Authorization code lifetime in seconds.'),
  deviceCodeLifetime: positiveSeconds.default(300).describe('Device code lifetime in seconds.'),
  pollingInterval: positiveSeconds.default(5).describe('Minimum seconds between device token polls (RFC 8628 §3.5).'),
  refreshTokenUsage: z
    .enum(['oneTimeOnly', 'reUse'])
    .default('oneTimeOnly')
    .describe('oneTimeOnly rotates the refresh token on every use; reUse keeps it.'),
  refreshTokenReuseGraceSeconds: z
    .number()
    .int()
    .min(0)
    .max(60)
    .default(5)
    .describe(
      'oneTimeOnly: seconds after a rotation during which the old refresh token, presented again while its successor is unused, gets that successor instead of revoking the family (a retry after a lost answer). 0 = strict.',
    ),
  refreshTokenRotationsPerMinute: z
    .number()
    .int()
    .min(1)
    .max(6000)
    .default(60)
    .describe(
      'oneTimeOnly: most rotations of one refresh-token family per minute, grace-window retries included; beyond, 429 with Retry-After and nothing rotated. Bounds what one token can make the store keep.',
    ),
  refreshTokenExpiration: z
    .enum(['absolute', 'sliding'])
    .default('absolute')
    .describe('absolute: fixed lifetime; sliding: renewed on use up to absoluteRefreshTokenLifetime.'),
  absoluteRefreshTokenLifetime: positiveSeconds.default(2592000).describe('Maximum refresh token lifetime in seconds.'),
  slidingRefreshTokenLifetime: positiveSeconds
    .default(1296000)
    .describe('Sliding refresh token lifetime in seconds (at most absoluteRefreshTokenLifetime).'),
  identityProviderRestrictions: z
    .array(nonEmpty)
    .default([])
    .describe('Identity providers (user idp values) allowed for this client; empty allows all.'),
  claims: z.array(claimSchema).default([]).describe("Client claims added to this client's tokens."),
  alwaysSendClientClaims: z
    .boolean()
    .default(false)
    .describe('Adds client claims to tokens issued for users too, not only client_credentials.'),
  properties: z
    .record(z.string(), z.string({ error: 'must be a string' }))
    .default({})
    .describe(
      'Free-form settings of this client for validators and the profile service (context.request.client.properties); never in tokens.',
    ),
});

const userSchema = z.strictObject({
  subjectId: nonEmpty,
  username: nonEmpty,
  passwordHash: nonEmpty,
  enabled: z.boolean().default(true),
  tenant: nonEmpty.optional(),
  idp: nonEmpty.default('local'),
  claims: z
    .record(
      z.string(),
      z.union([z.string(), z.number(), z.boolean(), z.array(z.string())], {
        error: 'must be a string, number, boolean or array of strings',
      }),
    )
    .default({}),
});

/**
 * Plaintext credentials that `tessera start` prints in its banner. Only for demo configs whose
 * secrets are public by design: the server itself only ever sees the hashes.
 */
const demoCredentialSchema = z.strictObject({
  kind: z.enum(['client', 'user', 'apiResource']),
  id: nonEmpty,
  secret: z.string(),
  note: z.string().optional(),
});

/** A Sentinel's address, `host:port` (an IPv6 host in brackets). */
const sentinelAddressSchema = z
  .string()
  .regex(/^(?:\[[0-9A-Fa-f:.]+\]|[^\s:[\]]+):(?:6553[0-5]|655[0-2]\d|65[0-4]\d\d|6[0-4]\d{3}|[1-5]\d{4}|[1-9]\d{0,3})$/, {
    error: 'must be host:port (e.g. "sentinel-1:26379")',
  });

const storeSchema = z
  .discriminatedUnion('type', [
    z.strictObject({
      type: z.literal('memory'),
      maxRecords: z
        .number()
        .int()
        .min(100)
        .default(1_000_000)
        .describe('Most records held at once; at the cap the oldest device codes go first, then new writes get 503.'),
    }),
    z.strictObject({
      type: z.literal('redis'),
      url: z.string().regex(/^rediss?:\/\//, { error: 'must be a redis:// or rediss:// URL' }),
      keyPrefix: z.string().default('tessera:'),
      commandTimeoutMs: z.number().int().positive().default(500),
    }),
    z.strictObject({
      type: z.literal('redis-cluster'),
      nodes: z.array(z.string().regex(/^rediss?:\/\//, { error: 'must be a redis:// or rediss:// URL' })).min(1),
      keyPrefix: z.string().default('tessera:'),
      commandTimeoutMs: z.number().int().positive().default(500),
    }),
    z.strictObject({
      type: z.literal('redis-sentinel'),
      sentinels: z
        .array(sentinelAddressSchema)
        .min(1)
        .describe('The Sentinels as "host:port"; list them all: any one that answers names the master.'),
      name: nonEmpty.describe('The master group the Sentinels monitor ("sentinel monitor <name> …").'),
      password: z.string().optional().describe('Password of the Redis master and replicas (requirepass or the ACL user).'),
      username: nonEmpty.optional().describe('ACL user on the Redis master and replicas.'),
      sentinelPassword: z.string().optional().describe('Password of the Sentinels, when they require one.'),
      sentinelUsername: nonEmpty.optional().describe('ACL user on the Sentinels.'),
      tls: z.boolean().default(false).describe('TLS to the Sentinels and to the Redis servers.'),
      waitForReplicas: z
        .number()
        .int()
        .min(0)
        .max(16)
        .default(0)
        .describe(
          'Replicas that must acknowledge each write (Redis WAIT) before it counts; 0 = do not wait. Costs a round trip per write.',
        ),
      keyPrefix: z.string().default('tessera:'),
      commandTimeoutMs: z.number().int().positive().default(500),
    }),
  ])
  .default({ type: 'memory', maxRecords: 1_000_000 });

const eventsSchema = z
  .strictObject({
    sink: z
      .enum(['none', 'stdout', 'file'])
      .default('none')
      .describe('Where audit events go as JSON lines (docs/operations.md, "Events"): nowhere, stdout, or the file named by events.file.'),
    file: nonEmpty.optional().describe('The JSON-lines file (appended to) when sink is "file"; relative to this config file.'),
    redisStream: z
      .strictObject({
        url: z
          .string()
          .regex(/^rediss?:\/\//, { error: 'must be a redis:// or rediss:// URL' })
          .optional()
          .describe("Redis to append to; default: the store's Redis URL."),
        key: nonEmpty.default('tessera:events'),
        maxLen: z.number().int().positive().default(100_000).describe('Approximate entries kept (XADD MAXLEN ~).'),
      })
      .optional()
      .describe('Also append every event to a Redis Stream, for consumers.'),
  })
  .refine((events) => events.sink !== 'file' || events.file !== undefined, { error: 'sink "file" needs events.file', path: ['file'] })
  .default({ sink: 'none' });

const managementSchema = z
  .strictObject({
    host: z.string().default('127.0.0.1').describe('Where the management listener (/metrics) listens.'),
    port: z.number().int().min(0).max(65535).default(9464).describe('Its port; 0 picks a free one.'),
    onPublicPort: z
      .boolean()
      .default(false)
      .describe('Serve /metrics on the public listener instead of a separate one; requires management.token.'),
    token: z
      .string()
      .min(16, { error: 'must be at least 16 characters' })
      .optional()
      .describe('When set, /metrics answers only requests with "Authorization: Bearer <token>".'),
  })
  .refine((management) => !management.onPublicPort || management.token !== undefined, {
    error: 'onPublicPort needs a token: /metrics would otherwise be public',
    path: ['token'],
  })
  .default({ host: '127.0.0.1', port: 9464, onPublicPort: false });

const clientRegistrySchema = z
  .strictObject({
    store: z
      .boolean()
      .default(false)
      .describe(
        "Also look clients up in the store, after the config file's clients (which win on the same clientId); the admin API writes them there.",
      ),
    cacheSize: z
      .number()
      .int()
      .positive()
      .default(10_000)
      .describe('Store-kept clients each gateway keeps in memory (least recently used go first).'),
    negativeCacheSize: z
      .number()
      .int()
      .positive()
      .default(10_000)
      .describe('Unknown client ids each gateway remembers as unknown, so that random ids do not each reach the store.'),
    cacheTtlSeconds: z
      .number()
      .int()
      .positive()
      .max(300)
      .default(30)
      .describe('Longest time a gateway uses a client (or an unknown id) it looked up before asking the store again.'),
    pollIntervalMs: z
      .number()
      .int()
      .min(50)
      .max(500)
      .default(250)
      .describe(
        "How often each gateway reads the registry's version key; a change empties its cache (changes seen everywhere within a second).",
      ),
  })
  .default({ store: false, cacheSize: 10_000, negativeCacheSize: 10_000, cacheTtlSeconds: 30, pollIntervalMs: 250 });

const adminSchema = z
  .strictObject({
    tokenFile: z
      .string()
      .optional()
      .describe(
        "A file holding the admin API's static bearer token (at least 32 characters); the admin API is served on the management listener when this or tokenScope is set.",
      ),
    tokenScope: z
      .string()
      .min(1)
      .regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'must be one scope token (RFC 6749 §3.3)')
      .optional()
      .describe(
        'An API scope whose access tokens (from this Tessera, typ at+jwt, not revoked, not sender-constrained) also authenticate to the admin API; off when absent.',
      ),
  })
  .default({});

/** The RFC 7591 client authentication methods a registered client may ask for (no keys in the store yet). */
export const registrationAuthMethods = [
  'client_secret_basic',
  'client_secret_post',
  'none',
  'private_key_jwt',
  'tls_client_auth',
  'self_signed_tls_client_auth',
] as const;

const dynamicClientRegistrationSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(false)
      .describe('Serves dynamic client registration (RFC 7591) and its management protocol (RFC 7592) at /connect/register.'),
    initialAccessTokenFile: z
      .string()
      .optional()
      .describe(
        'A file holding the initial access token (at least 32 characters) a registration must present as a Bearer token; absent: open registration.',
      ),
    maxMetadataBytes: z
      .number()
      .int()
      .min(1024)
      .max(65_536)
      .default(8192)
      .describe("Largest registration request body (a client's metadata) in bytes; larger: 413."),
    policy: z
      .strictObject({
        grantTypes: z
          .array(nonEmpty)
          .default(['authorization_code', 'refresh_token'])
          .describe('Grant types a registered client may ask for.'),
        scopes: z
          .array(nonEmpty)
          .default(['openid'])
          .describe('Scopes a registered client may ask for; also what it gets when it names none.'),
        redirectUriSchemes: z
          .array(nonEmpty)
          .default(['https'])
          .describe('URI schemes a registered redirect URI may have (add "http" for loopback development clients).'),
        tokenEndpointAuthMethods: z
          .array(z.enum(registrationAuthMethods))
          .default(['client_secret_basic', 'client_secret_post', 'none'])
          .describe(
            'Client authentication methods a registered client may ask for. private_key_jwt (with jwks or jwks_uri), tls_client_auth and self_signed_tls_client_auth (RFC 8705 §2) are offered only when listed here.',
          ),
      })
      .default({
        grantTypes: ['authorization_code', 'refresh_token'],
        scopes: ['openid'],
        redirectUriSchemes: ['https'],
        tokenEndpointAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
      })
      .describe('What a registered client may ask for; anything else is refused with invalid_client_metadata or invalid_redirect_uri.'),
  })
  .default({
    enabled: false,
    maxMetadataBytes: 8192,
    policy: {
      grantTypes: ['authorization_code', 'refresh_token'],
      scopes: ['openid'],
      redirectUriSchemes: ['https'],
      tokenEndpointAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
    },
  });

/**
 * One API resource (`apiResources[i]`): the config file's and the admin API's store-kept ones
 * (gateway/admin/api_resources_api.ts) are checked by this one schema.
 */
export const apiResourceSchema = z.strictObject({
  name: nonEmpty,
  scopes: z.array(nonEmpty).default([]),
  secrets: z.array(secretSchema).default([]),
});

const tracingSchema = z
  .strictObject({
    enabled: z
      .boolean()
      .default(false)
      .describe(
        'OpenTelemetry trace spans for each OAuth form request, exported over OTLP/HTTP as the standard OTEL_* variables say (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER, ...).',
      ),
  })
  .default({ enabled: false });

export const configSchema = z
  .strictObject({
    $schema: z.string().optional(),
    issuer: z
      .url({
        protocol: /^https?$/,
        // A missing issuer would otherwise be reported as "must be an http(s) URL".
        error: (issue) => (issue.input === undefined ? 'is required' : 'must be an http(s) URL'),
        abort: true,
      })
      .refine((u) => !u.endsWith('/') && !u.includes('?') && !u.includes('#'), {
        error: 'must not end with "/" or carry a query or fragment',
      }),
    listen: z
      .strictObject({
        host: z.string().default('127.0.0.1'),
        port: z.number().int().min(0).max(65535).default(5000),
      })
      .default({ host: '127.0.0.1', port: 5000 }),
    tls: z
      .strictObject({
        certFile: nonEmpty.describe('PEM certificate chain, relative to this file. Re-read on SIGHUP.'),
        keyFile: nonEmpty.describe('PEM private key of the certificate, relative to this file. Re-read on SIGHUP.'),
      })
      .optional()
      .describe('Serve HTTPS on the listener (leave out behind a TLS-terminating proxy).'),
    mtls: z
      .strictObject({
        caFile: nonEmpty
          .optional()
          .describe(
            'PEM trust anchors for tls_client_auth certificates, relative to this file. With tls, the listener asks clients for a certificate and the TLS handshake checks it against these (self-signed client certificates must then be listed here too).',
          ),
        certificateHeader: z
          .string()
          .regex(/^[a-z0-9-]+$/, { error: 'must be a lower-case header name' })
          .default('x-client-cert')
          .describe(
            "The header a trusted proxy (trustedProxies) writes the client's certificate into, URL-encoded PEM (nginx $ssl_client_escaped_cert); never read from another peer.",
          ),
      })
      .default({ certificateHeader: 'x-client-cert' })
      .describe(
        'Mutual TLS (RFC 8705): client certificates for tls_client_auth, self_signed_tls_client_auth and certificate-bound tokens.',
      ),
    trustedProxies: z
      .array(
        nonEmpty.refine((cidr) => parseCidr(cidr) !== undefined, { error: 'must be an IPv4 or IPv6 address or CIDR, e.g. 10.0.0.0/8' }),
      )
      .default([])
      .describe(
        'Proxies (CIDRs) whose forwarded client address is taken for throttles and logs; from any other peer the forwarding header is ignored.',
      ),
    forwardedHeader: z
      .enum(['x-forwarded-for', 'forwarded'])
      .default('x-forwarded-for')
      .describe('The header the trusted proxies write the client address into; the other one is never read.'),
    store: storeSchema,
    processes: z
      .number()
      .int()
      .min(1)
      .max(64)
      .default(1)
      .describe(
        'Front-end processes sharing the listening port (SO_REUSEPORT), each with its own worker threads; above 1 needs the Redis store. "tessera start --processes N" overrides it.',
      ),
    workers: z
      .strictObject({
        threads: z.number().int().min(1).max(64).default(2),
        /** Requests waiting for a worker before the gateway sheds load with 503. */
        maxQueue: z.number().int().min(1).default(4096),
        passwordConcurrency: z
          .number()
          .int()
          .min(1)
          .default(4)
          .describe('Password checks (password grant, login pages) running at once: each is one argon2 verification.'),
        passwordMaxQueue: z
          .number()
          .int()
          .min(1)
          .default(256)
          .describe('Password checks waiting, beyond which a password request gets 503 with Retry-After.'),
        passwordShedDelayMs: z
          .number()
          .int()
          .min(0)
          .max(10_000)
          .default(1000)
          .describe(
            'How long the 503 of a password request beyond the queue is held before it is sent (0: at once), so a flood that ignores Retry-After cannot turn refusals into a CPU storm.',
          ),
      })
      .default({ threads: 2, maxQueue: 4096, passwordConcurrency: 4, passwordMaxQueue: 256, passwordShedDelayMs: 1000 }),
    shutdown: z
      .strictObject({
        drainSeconds: z
          .number()
          .min(0)
          .max(600)
          .default(5)
          .describe(
            'After SIGTERM: seconds during which /readyz answers 503 while requests are still served, so load balancers stop sending.',
          ),
        requestTimeoutSeconds: z
          .number()
          .positive()
          .max(600)
          .default(10)
          .describe('After the listener closes: how long requests in flight may take to finish before the process stops anyway.'),
      })
      .default({ drainSeconds: 5, requestTimeoutSeconds: 10 }),
    signing: z
      .strictObject({
        algorithm: z.enum(signingAlgorithms).default('ES256').describe('The algorithm every signing key must have.'),
        keys: z
          .array(z.strictObject({ file: nonEmpty }))
          .default([])
          .describe(
            'Private JWK files; the first signs, all are published. Re-read on change or reload. Empty: keys kept in the store and generated by Tessera.',
          ),
        jwksMaxAgeSeconds: z
          .number()
          .int()
          .min(0)
          .max(86_400)
          .default(300)
          .describe('Cache-Control max-age of the JWKS and discovery answers, in seconds.'),
        rotation: z
          .strictObject({
            every: durationSchema.describe('How long each store-kept key signs before the next takes over (e.g. "90d").'),
            propagation: durationSchema
              .optional()
              .describe('How long a new key is published before it signs; at least jwksMaxAgeSeconds (the default).'),
            retention: durationSchema
              .optional()
              .describe('How long a retired key stays published; at least the longest access or ID token lifetime (the default).'),
          })
          .optional()
          .describe('Automatic rotation of store-kept keys (no signing.keys).'),
      })
      .default({ algorithm: 'ES256', keys: [], jwksMaxAgeSeconds: 300 }),
    keyEncryption: z
      .strictObject({
        keyFile: nonEmpty
          .optional()
          .describe(
            'File of key-encryption keys (32 random bytes, base64; one a line, the first encrypts, all decrypt) for the page secret and store-kept signing keys at rest. TESSERA_KEY_ENCRYPTION_KEY takes precedence.',
          ),
      })
      .default({})
      .describe('Encryption at rest of the secrets Tessera keeps in the store (docs/security.md, "Keys at rest").'),
    validatorsDir: z.string().default('validators').describe('Folder of extension grant validator modules, relative to this file.'),
    throttling: z
      .strictObject({
        password: z
          .strictObject({
            maxFailures: z.number().int().positive().default(5),
            windowSeconds: z.number().int().positive().default(900),
          })
          .default({ maxFailures: 5, windowSeconds: 900 })
          .describe('Failed password attempts per username and client before 429, and the window they count in.'),
        clientAuthentication: z
          .strictObject({
            maxFailures: z.number().int().positive().default(10),
            windowSeconds: z.number().int().positive().default(300),
          })
          .default({ maxFailures: 10, windowSeconds: 300 })
          .describe('Failed client authentications per client_id before 429, and the window they count in.'),
        userCode: z
          .strictObject({
            maxFailures: z.number().int().positive().default(10),
            windowSeconds: z.number().int().positive().default(300),
          })
          .default({ maxFailures: 10, windowSeconds: 300 })
          .describe('Wrong user codes on the /device page per source address and per browser before 429.'),
        passwordPerUser: z
          .strictObject({
            maxFailures: z.number().int().positive().default(20),
            windowSeconds: z.number().int().positive().default(900),
          })
          .default({ maxFailures: 20, windowSeconds: 900 })
          .describe('Failed password attempts per username across all clients before 429, and the window they count in.'),
        passwordPerAddress: z
          .strictObject({
            maxFailures: z.number().int().positive().default(20),
            windowSeconds: z.number().int().positive().default(300),
          })
          .default({ maxFailures: 20, windowSeconds: 300 })
          .describe('Failed password attempts per client and source address before 429 (password spraying), and the window they count in.'),
        deviceAuthorization: z
          .strictObject({
            maxRequests: z.number().int().positive().default(30),
            windowSeconds: z.number().int().positive().default(60),
          })
          .default({ maxRequests: 30, windowSeconds: 60 })
          .describe('Device authorization requests per client and source address in a window, beyond which 429.'),
        introspectionInactive: z
          .strictObject({
            maxFailures: z.number().int().positive().default(300),
            windowSeconds: z.number().int().positive().default(60),
          })
          .default({ maxFailures: 300, windowSeconds: 60 })
          .describe('Introspection answers of active:false per caller before 429 (token scanning, RFC 7662 §4), and their window.'),
        clientRegistration: z
          .strictObject({
            maxRequests: z.number().int().positive().default(10),
            windowSeconds: z.number().int().positive().default(3600),
          })
          .default({ maxRequests: 10, windowSeconds: 3600 })
          .describe('Dynamic client registrations (POST /connect/register) per source address in a window, beyond which 429.'),
      })
      .default({
        password: { maxFailures: 5, windowSeconds: 900 },
        clientAuthentication: { maxFailures: 10, windowSeconds: 300 },
        userCode: { maxFailures: 10, windowSeconds: 300 },
        passwordPerUser: { maxFailures: 20, windowSeconds: 900 },
        passwordPerAddress: { maxFailures: 20, windowSeconds: 300 },
        deviceAuthorization: { maxRequests: 30, windowSeconds: 60 },
        introspectionInactive: { maxFailures: 300, windowSeconds: 60 },
        clientRegistration: { maxRequests: 10, windowSeconds: 3600 },
      }),
    dpop: z
      .strictObject({
        proofWindowSeconds: z
          .number()
          .int()
          .min(1)
          .max(600)
          .default(60)
          .describe("How far a DPoP proof's iat may be from this server's clock, either way, in seconds (RFC 9449 §11.1)."),
        requireNonce: z
          .boolean()
          .default(false)
          .describe(
            'DPoP proofs at the token endpoint must carry a server nonce (RFC 9449 §8), for every client that does not set requireDPoPNonce.',
          ),
        nonceLifetimeSeconds: z
          .number()
          .int()
          .min(10)
          .max(86_400)
          .default(300)
          .describe('How often the server nonce changes; a nonce is accepted for one to two lifetimes.'),
      })
      .default({ proofWindowSeconds: 60, requireNonce: false, nonceLifetimeSeconds: 300 })
      .describe('DPoP, sender-constrained tokens (RFC 9449): proof checks and server nonces.'),
    pushedAuthorizationRequests: z
      .strictObject({
        required: z
          .boolean()
          .default(false)
          .describe('Every client must push its authorization requests (RFC 9126 §5); else per client requirePushedAuthorizationRequests.'),
        lifetimeSeconds: z
          .number()
          .int()
          .min(1)
          .max(600)
          .default(60)
          .describe('How long a request_uri from /connect/par stays usable (its expires_in, RFC 9126 §2.2).'),
      })
      .default({ required: false, lifetimeSeconds: 60 })
      .describe('Pushed authorization requests (RFC 9126).'),
    validatorTimeoutMs: z.number().int().positive().default(5000),
    clientAssertions: z
      .strictObject({
        maxLifetimeSeconds: z
          .number()
          .int()
          .positive()
          .max(3600)
          .default(300)
          .describe('Latest exp a private_key_jwt assertion may carry, in seconds from now (its jti is kept until then).'),
        jwksCacheSeconds: z
          .number()
          .int()
          .positive()
          .default(300)
          .describe("How long a client's jwksUri keys are used before they are fetched again."),
        jwksRefreshCooldownSeconds: z
          .number()
          .int()
          .min(0)
          .default(30)
          .describe('Least time between two fetches of one jwksUri caused by an unknown kid.'),
        jwksTimeoutMs: z.number().int().positive().max(30_000).default(3000).describe('Time limit of one jwksUri fetch.'),
      })
      .default({ maxLifetimeSeconds: 300, jwksCacheSeconds: 300, jwksRefreshCooldownSeconds: 30, jwksTimeoutMs: 3000 })
      .describe('private_key_jwt client authentication (RFC 7523): assertion lifetime and jwksUri fetching.'),
    sessionLifetimeSeconds: z
      .number()
      .int()
      .positive()
      .default(36000)
      .describe("How long a sign-in on the login page lasts (single sign-on); IdentityServer's default is 10 hours."),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    logFormat: z
      .enum(['auto', 'json', 'pretty'])
      .default('auto')
      .describe('json: pino JSON lines; pretty: readable lines (needs the pino-pretty package); auto: pretty when stdout is a terminal.'),
    events: eventsSchema,
    tracing: tracingSchema,
    management: managementSchema,
    clientRegistry: clientRegistrySchema,
    admin: adminSchema,
    dynamicClientRegistration: dynamicClientRegistrationSchema,
    identityResources: z
      .array(z.strictObject({ name: nonEmpty, displayName: z.string().optional(), claims: z.array(nonEmpty).default([]) }))
      .default([]),
    apiScopes: z.array(z.strictObject({ name: nonEmpty, displayName: z.string().optional() })).default([]),
    apiResources: z.array(apiResourceSchema).default([]),
    clients: z.array(clientSchema).default([]),
    users: z.array(userSchema).default([]).describe('Users for the built-in password validator, the login page and the device page.'),
    demoCredentials: z
      .array(demoCredentialSchema)
      .optional()
      .describe('Plaintext demo credentials printed by "tessera start". Public by design: demo configs only.'),
  })
  .meta({ title: 'Tessera config', description: 'Config file of the Tessera OAuth 2.0 / OpenID Connect token service.' });

/** Recursively readonly view of a plain-data type. */
export type DeepReadonly<T> = T extends (infer E)[]
  ? readonly DeepReadonly<E>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

/** What the schema's parse returns (mutable); only the loader handles it. */
export type ParsedConfig = z.output<typeof configSchema>;
/** A validated config as the rest of the code sees it: read-only all the way down. */
export type TesseraConfig = DeepReadonly<ParsedConfig>;

/**
 * `true` when A and B have the same members and each is assignable to the other: a compile-time
 * equality of shapes (assignability alone would let an optional member go missing on one side).
 */
export type SameShape<A, B> = [A] extends [B]
  ? [B] extends [A]
    ? [keyof A] extends [keyof B]
      ? [keyof B] extends [keyof A]
        ? true
        : false
      : false
    : false
  : false;

// The worker threads declare the config they read on their side of the thread boundary
// (core/worker_config.ts), so that they never load this schema. These lines stop the
// build when the schema and those types drift apart: whole sections must match exactly, and a
// validated config must carry everything the workers read.
true satisfies SameShape<TesseraConfig['clients'][number], ClientConfig>;
true satisfies SameShape<TesseraConfig['clients'][number]['clientSecrets'][number], SecretConfig>;
true satisfies SameShape<TesseraConfig['apiResources'][number]['secrets'][number], SecretConfig>;
true satisfies SameShape<TesseraConfig['users'][number], UserConfig>;
true satisfies SameShape<TesseraConfig['store'], StoreConfig>;
true satisfies SameShape<TesseraConfig['dpop'], DPoPConfig>;
true satisfies TesseraConfig extends WorkerConfig ? true : false;
