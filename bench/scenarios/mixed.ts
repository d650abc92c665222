import { addClients, addIntrospectionSecret } from '../support/bench_config.js';
import { authorizationCodeKind, clientCredentialsKind, introspectionKind, refreshTokenKind } from './kinds.js';
import { authorizationCodeFloor } from './authorization_code.js';
import { clientCredentialsFloor } from './client_credentials.js';
import { mixFloors } from './floor.js';
import { presentedTokenFloor } from './introspection.js';
import { refreshTokenFloor } from './refresh_token.js';
import type { ActiveScenario } from './scenario.js';

/** Each kind's share of the requests, in percent. */
const shares = { clientCredentials: 60, refreshToken: 25, authorizationCode: 10, introspection: 5 } as const;

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
  floor: mixFloors([
    { floor: clientCredentialsFloor, weight: shares.clientCredentials },
    { floor: refreshTokenFloor, weight: shares.refreshToken },
    { floor: authorizationCodeFloor, weight: shares.authorizationCode },
    { floor: presentedTokenFloor, weight: shares.introspection },
  ]),
  workload: async (server) => [
    clientCredentialsKind(shares.clientCredentials),
    refreshTokenKind(shares.refreshToken),
    authorizationCodeKind(shares.authorizationCode),
    await introspectionKind(server, shares.introspection),
  ],
};
