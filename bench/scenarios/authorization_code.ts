import { addClients } from '../support/bench_config.js';
import { authorizationCodeKind } from './kinds.js';
import { oncePerRequest, type RequestFloor } from './floor.js';
import type { ActiveScenario } from './scenario.js';

/**
 * An ES256 access token and an ID token; on Redis one store call (issue 33, `Store.redeemRecord`):
 * the code checked and consumed, the refresh token derived from it written with the access token
 * record as its companion.
 */
export const authorizationCodeFloor: RequestFloor = {
  signatures: { ES256: 2 },
  verifications: {},
  store: oncePerRequest({ op: 'redeemRecord', record: 'code', bytes: 321, derivedBytes: 248, companions: [55] }),
};

export const authorizationCode: ActiveScenario = {
  kind: 'active',
  name: 'authorization_code',
  measures:
    'POST /connect/token, grant_type=authorization_code with PKCE S256 (web, Basic), scope "openid api1 offline_access": each request redeems a code never used before (seeded into the store before each run as the authorize endpoint stores them, each with its own verifier); answers an ES256 access token, an ID token and a refresh token, the code consumed and the refresh token stored in one atomic step.',
  server: 'tessera',
  stores: ['memory', 'redis'],
  signing: 'ES256',
  expectedRps: 6_000,
  configure(config) {
    addClients(config, 'web');
  },
  workload: () => Promise.resolve([authorizationCodeKind()]),
  floor: authorizationCodeFloor,
};
