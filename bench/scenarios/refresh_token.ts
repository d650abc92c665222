import { oidcProviderRefreshToken, oidcProviderRefreshTokenOnRedis } from '../peers/peers.js';
import { addClients } from '../support/bench_config.js';
import { refreshTokenKind } from './kinds.js';
import { oncePerRequest, type RequestFloor } from './floor.js';
import type { ActiveScenario } from './scenario.js';

/**
 * One ES256 access token (scope api1 offline_access: no ID token); on Redis the read of the
 * presented token and the rotation that writes its successor with two companions, the access
 * token record and the grace window's retry record.
 */
export const refreshTokenFloor: RequestFloor = {
  signatures: { ES256: 1 },
  verifications: {},
  store: oncePerRequest({ op: 'get', bytes: 214 }, { op: 'rotate', oldBytes: 214, bytes: 214, companions: [55, 27] }),
};

export const refreshToken: ActiveScenario = {
  kind: 'active',
  name: 'refresh_token',
  measures:
    'POST /connect/token, grant_type=refresh_token with rotation (ro.client, Basic, oneTimeOnly): each request presents a refresh token never used before (seeded into the store before each run as the password grant stores them) and gets an ES256 access token and the successor; two store commands: a read, and the atomic rotate that also records the access token. Against node-oidc-provider rotating its own pre-issued refresh tokens, kept in a Map in its heap and in Redis.',
  server: 'tessera',
  stores: ['memory', 'redis'],
  signing: 'ES256',
  expectedRps: 7_000,
  configure(config) {
    addClients(config, 'ro');
  },
  workload: () => Promise.resolve([refreshTokenKind()]),
  floor: refreshTokenFloor,
  peers: [oidcProviderRefreshToken, oidcProviderRefreshTokenOnRedis],
};
