/** The peers Tessera is measured against, one entry per peer scenario. */
import { basicAuthorization, formPost, tokenResponse, verifyAccessTokenResponse, type PeerDefinition } from '../scenarios/scenario.js';

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

// The refresh_token peer joins here with Tessera's refresh grant: mode 'refresh_token' in
// oidc_provider_process.ts, and a plan whose request carries a refresh token obtained at start-up
// (with rotation off, so that one token can be replayed under load).
