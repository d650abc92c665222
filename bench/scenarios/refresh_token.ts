import { oidcProviderRefreshToken, oidcProviderRefreshTokenOnRedis } from '../peers/peers.js';
import { addClients } from '../support/bench_config.js';
import { refreshTokenKind } from './kinds.js';
import { oncePerRequest, type RequestFloor } from './floor.js';
import type { ActiveScenario } from './scenario.js';

/**
 * One ES256 access token (scope api1 offline_access: no ID token); on Redis one store call (issue
 * 33, `Store.redeemChain`): the presented token checked and rotated, its successor written with
 * the access token record as companion and the grace window's retry value in the chain record.
 */
export const refreshTokenFloor: RequestFloor = {
  signatures: { ES256: 1 },
  verifications: {},
  store: oncePerRequest({ op: 'redeemChain', bytes: 214, companions: [55] }),
};

export const refreshToken: ActiveScenario = {
  kind: 'active',
  name: 'refresh_token',
  measures:
    'POST /connect/token, grant_type=refresh_token with rotation (ro.client, Basic, oneTimeOnly): each request presents a refresh token never used before (seeded into the store before each run as the password grant stores them) and gets an ES256 access token and the successor; one store command: the atomic check and rotation that also records the access token. Against node-oidc-provider rotating its own pre-issued refresh tokens, kept in a Map in its heap and in Redis.',
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
