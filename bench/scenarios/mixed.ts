import { addClients, addIntrospectionSecret } from '../support/bench_config.js';
import { authorizationCodeKind, clientCredentialsKind, introspectionKind, refreshTokenKind } from './kinds.js';
import type { ActiveScenario } from './scenario.js';

export const mixed: ActiveScenario = {
  kind: 'active',
  name: 'mixed',
  measures:
    'A mix chosen per request by the load generator: 60% client_credentials, 25% refresh_token rotation, 10% authorization_code redemption (PKCE), 5% introspection, each exactly as in its own scenario (refresh tokens and codes seeded, one use each). Every answer must meet the expectation of its kind; the shares answered are printed below the table.',
  server: 'tessera',
  stores: ['memory', 'redis'],
  signing: 'ES256',
  expectedRps: 9_000,
  configure(config) {
    addClients(config, 'ro', 'web');
    addIntrospectionSecret(config);
  },
  workload: async (server) => [
    clientCredentialsKind(60),
    refreshTokenKind(25),
    authorizationCodeKind(10),
    await introspectionKind(server, 5),
  ],
};
