import { addBenchUser, addClients, cheapHashUser } from '../support/bench_config.js';
import { passwordPlan } from './kinds.js';
import { password } from './password.js';
import type { ActiveScenario } from './scenario.js';

/**
 * The password grant with a user whose hash costs about 0.28 ms (argon2id m=1 MiB, t=1, p=1, the
 * least a config accepts): "password minus the hash" (issue 18) measured rather than subtracted.
 * Minus the 14 ms hash of the `password` scenario, what else a request does is within that hash's
 * measuring spread (bench/README.md, "Bars"); minus this one it is not. No peer:
 * node-oidc-provider has no password grant.
 */
export const passwordCheapHash: ActiveScenario = {
  kind: 'active',
  name: 'password_cheap_hash',
  measures:
    'POST /connect/token, grant_type=password (ro.client, Basic) for a user whose argon2id hash has the least cost a config accepts (m=1024, t=1, p=1, about 0.28 ms): everything the password grant does but the 14 ms of a real hash (the throttle in the store, the verify, an ES256 access token and a refresh token written to the store), judged minus that cheap verify measured in each round.',
  server: 'tessera',
  stores: ['memory', 'redis'],
  signing: 'ES256',
  configure(config) {
    addClients(config, 'ro');
    addBenchUser(config, cheapHashUser);
  },
  plan: passwordPlan(cheapHashUser),
  // The password scenario's floor, the cheap verify excluded instead of the real one.
  floor: { ...password.floor!, excludes: 'argon2id-verify-cheap' },
};
