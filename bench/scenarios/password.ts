import os from 'node:os';
import { addBenchUser, addClients, benchClients, benchUser } from '../support/bench_config.js';
import { describeHashCost, measureHashCost } from '../support/argon2_cost.js';
import { refreshScopes } from './kinds.js';
import { subjectIs, tokenExpectation, verifyAccessTokenResponse } from './checks.js';
import { basicAuthorization, formPost } from './requests.js';
import type { ActiveScenario } from './scenario.js';

const scope = refreshScopes.join(' ');

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
  plan: {
    request: formPost(
      '/connect/token',
      { grant_type: 'password', username: benchUser.username, password: benchUser.password, scope },
      basicAuthorization(benchClients.ro.clientId, benchClients.ro.secret),
    ),
    expect: tokenExpectation({ refreshToken: true, idToken: false }),
    verify: verifyAccessTokenResponse('ES256', scope, {
      refreshToken: true,
      idToken: false,
      claims: subjectIs(benchUser.subject),
    }),
  },
  async notes() {
    return [describeHashCost(await measureHashCost(), os.availableParallelism())];
  },
};
