import { oidcProviderClientCredentials } from '../peers/peers.js';
import { benchClient } from '../support/bench_config.js';
import { basicAuthorization, formPost, tokenResponse, verifyAccessTokenResponse, type ActiveScenario } from './scenario.js';

export const clientCredentials: ActiveScenario = {
  kind: 'active',
  name: 'client_credentials',
  measures:
    'POST /connect/token, grant_type=client_credentials, client_secret_basic, one ES256 RFC 9068 access token per request; against node-oidc-provider doing the same.',
  server: 'tessera',
  // The grant reads and writes no store; Redis is measured to show its configuration costs nothing here.
  stores: ['memory', 'redis'],
  signing: 'ES256',
  plan: {
    request: formPost(
      '/connect/token',
      { grant_type: 'client_credentials', scope: benchClient.scope },
      basicAuthorization(benchClient.clientId, benchClient.secret),
    ),
    expect: tokenResponse,
    verify: verifyAccessTokenResponse('ES256', benchClient.scope),
  },
  peers: [oidcProviderClientCredentials],
};
