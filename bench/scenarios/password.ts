import os from 'node:os';
import { addBenchUser, addClients } from '../support/bench_config.js';
import { describeHashCost, measureHashCost } from '../support/argon2_cost.js';
import { passwordPlan } from './kinds.js';
import { oncePerRequest } from './floor.js';
import type { ActiveScenario } from './scenario.js';

export const password: ActiveScenario = {
  kind: 'active',
  name: 'password',
  measures:
    'POST /connect/token, grant_type=password (ro.client, Basic) for the bench user, scope "api1 offline_access": the brute-force throttle in the store, one argon2id verify (m=19456, t=2, p=1) on the libuv pool, an ES256 access token and a refresh token written to the store. Bound by the hash by design: read it as CPU per request.',
  server: 'tessera',
  stores: ['memory', 'redis'],
  signing: 'ES256',
  configure(config) {
    addClients(config, 'ro');
    addBenchUser(config);
  },
  plan: passwordPlan(),
  // An ES256 access token; on Redis the two failure counters (client and user) counted and reset,
  // the access token record and the refresh token written. The hash is compared apart.
  floor: {
    signatures: { ES256: 1 },
    verifications: {},
    store: oncePerRequest(
      { op: 'increment' },
      { op: 'increment' },
      { op: 'del' },
      { op: 'del' },
      { op: 'write', family: true, ifAbsent: false, bytes: 55 },
      { op: 'write', family: true, ifAbsent: false, bytes: 214 },
    ),
    excludes: 'argon2id-verify',
  },
  async notes() {
    return [describeHashCost(await measureHashCost(), os.availableParallelism())];
  },
};
