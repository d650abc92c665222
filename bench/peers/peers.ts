/** The peers Tessera is measured against, one entry per peer scenario. */
import { tokenResponse, verifyAccessTokenResponse } from '../scenarios/checks.js';
import { refreshTokenKind } from '../scenarios/kinds.js';
import { basicAuthorization, formPost } from '../scenarios/requests.js';
import type { PeerDefinition } from '../scenarios/scenario.js';

/** The client `oidc_provider_process.ts` registers: the same credentials and scope as Tessera's. */
export const peerClient = { clientId: 'm2m', secret: 'secret', resource: 'urn:api1', scope: 'api1' } as const;

/** node-oidc-provider, client_credentials → RFC 9068 JWT signed ES256, client_secret_basic. */
export const oidcProviderClientCredentials: PeerDefinition = {
  name: 'node-oidc-provider',
  mode: 'client_credentials',
  signing: 'ES256',
  plan: {
    request: formPost(
      '/token',
      { grant_type: 'client_credentials', scope: peerClient.scope },
      basicAuthorization(peerClient.clientId, peerClient.secret),
    ),
    expect: tokenResponse,
    verify: verifyAccessTokenResponse('ES256', peerClient.scope),
  },
};

/** The account the peer's pre-issued refresh tokens belong to. */
const peerSubject = 'bench-user-1';

/**
 * node-oidc-provider, refresh_token with rotation → RFC 9068 JWT signed ES256 and a new refresh
 * token, client_secret_basic. Each request presents a refresh token the peer saved through its
 * own models before the run (peers/oidc_provider_process.ts), one use each.
 */
export const oidcProviderRefreshToken: PeerDefinition = {
  name: 'node-oidc-provider',
  mode: 'refresh_token',
  store: 'memory',
  signing: 'ES256',
  expectedRps: 2_500,
  workload: () =>
    Promise.resolve([
      refreshTokenKind(1, {
        path: '/token',
        client: peerClient,
        subject: peerSubject,
        scopes: ['offline_access', peerClient.scope],
        accessTokenScope: peerClient.scope,
        claims: () => ({}),
      }),
    ]),
};

/** The same on Redis (peers/redis_adapter.ts), as several instances of it would be deployed. */
export const oidcProviderRefreshTokenOnRedis: PeerDefinition = { ...oidcProviderRefreshToken, store: 'redis' };
