// The config schema and the config types the workers declare on their side of the thread
// boundary (core/worker_config.ts) describe the same sections. gateway/config/schema.ts
// checks that at compile time with SameShape; these checks show SameShape can tell a drift.
import t from 'tap';
import { clientSchema, type SameShape } from '../../../gateway/config/schema.js';
import type { ClientConfig } from '../../../core/worker_config.js';

// Checked by `tsc` (npm run typecheck): each @ts-expect-error fails the typecheck if SameShape
// ever accepts the drifted shape below it.
true satisfies SameShape<ClientConfig, ClientConfig>;
// @ts-expect-error a member missing on one side
true satisfies SameShape<Omit<ClientConfig, 'enabled'>, ClientConfig>;
// @ts-expect-error an optional member missing on one side
true satisfies SameShape<Omit<ClientConfig, 'clientName'>, ClientConfig>;
// @ts-expect-error a member of another type
true satisfies SameShape<Omit<ClientConfig, 'pollingInterval'> & { readonly pollingInterval: string }, ClientConfig>;

t.test('a client given only its required members has every member the workers read', async (t) => {
  // Every member of ClientConfig, listed once: the compiler refuses a missing or unknown one.
  const members: Record<keyof ClientConfig, true> = {
    clientId: true,
    clientName: true,
    enabled: true,
    clientSecrets: true,
    requireClientSecret: true,
    allowedGrantTypes: true,
    allowedScopes: true,
    allowOfflineAccess: true,
    allowRememberConsent: true,
    consentLifetime: true,
    audiences: true,
    allowClientTokenExchange: true,
    allowedCorsOrigins: true,
    postLogoutRedirectUris: true,
    jwks: true,
    jwksUri: true,
    allowTokenEndpointAudience: true,
    tokenEndpointAuthMethod: true,
    tlsClientAuthSubjectDn: true,
    tlsClientAuthSanDns: true,
    tlsClientAuthSanUri: true,
    tlsClientAuthSanIp: true,
    tlsClientAuthSanEmail: true,
    tlsClientCertificateBoundAccessTokens: true,
    redirectUris: true,
    requirePkce: true,
    allowPlainTextPkce: true,
    profile: true,
    requireDPoP: true,
    requireDPoPNonce: true,
    requirePushedAuthorizationRequests: true,
    requireSignedRequestObject: true,
    accessTokenLifetime: true,
    identityTokenLifetime: true,
    authorizationCodeLifetime: true,
    deviceCodeLifetime: true,
    pollingInterval: true,
    refreshTokenUsage: true,
    refreshTokenReuseGraceSeconds: true,
    refreshTokenRotationsPerMinute: true,
    refreshTokenExpiration: true,
    absoluteRefreshTokenLifetime: true,
    slidingRefreshTokenLifetime: true,
    identityProviderRestrictions: true,
    claims: true,
    alwaysSendClientClaims: true,
    properties: true,
  };
  const parsed: ClientConfig = clientSchema.parse({ clientId: 'c', allowedGrantTypes: ['client_credentials'] });
  const optional = new Set<string>([
    'clientName',
    'jwks',
    'jwksUri',
    'requireDPoPNonce',
    'profile',
    'tokenEndpointAuthMethod',
    'tlsClientAuthSubjectDn',
    'tlsClientAuthSanDns',
    'tlsClientAuthSanUri',
    'tlsClientAuthSanIp',
    'tlsClientAuthSanEmail',
    'consentLifetime',
  ]);
  t.same(
    Object.keys(parsed).sort(),
    Object.keys(members)
      .filter((member) => !optional.has(member))
      .sort(),
  );
});
