import path from 'node:path';
import { addBenchUser, addClients, benchClients, benchUser } from '../support/bench_config.js';
import { obtainAccessToken } from './kinds.js';
import { subjectIs, tokenExpectation, verifyAccessTokenResponse } from './checks.js';
import { basicAuthorization, formPost } from './requests.js';
import { presentedTokenFloor } from './introspection.js';
import type { ActiveScenario } from './scenario.js';

export const delegation: ActiveScenario = {
  kind: 'active',
  name: 'delegation',
  measures:
    "POST /connect/token, grant_type=delegation (api1, Basic) with the bench user's api1 access token (one, from the password grant before the load) and scope=api2: the shipped validator (validators/delegation.ts) checks the incoming token (signature, expiry, the store's deny list), and an ES256 token for api2 is issued with the user's sub and act.client_id=api1.",
  server: 'tessera',
  stores: ['memory', 'redis'],
  signing: 'ES256',
  // The presented token verified and looked up in the deny list, and one ES256 token issued.
  floor: { ...presentedTokenFloor, signatures: { ES256: 1 } },
  configure(config, { gatewayRoot }) {
    addClients(config, 'frontend', 'api1');
    addBenchUser(config);
    config.validatorsDir = path.join(gatewayRoot, 'validators');
  },
  async workload(server) {
    const userToken = await obtainAccessToken(server, 'user', 'api1');
    return [
      {
        name: 'delegation',
        weight: 1,
        request: formPost(
          '/connect/token',
          { grant_type: 'delegation', token: userToken, scope: 'api2' },
          basicAuthorization(benchClients.api1.clientId, benchClients.api1.secret),
        ),
        expect: tokenExpectation({ refreshToken: false }),
        verify: verifyAccessTokenResponse('ES256', 'api2', {
          refreshToken: false,
          claims: (payload) => {
            const sub = subjectIs(benchUser.subject)(payload);
            if (sub !== null) return sub;
            const act = payload.act as { client_id?: unknown } | undefined;
            return act?.client_id === benchClients.api1.clientId ? null : `JWT act ${JSON.stringify(payload.act)}`;
          },
        }),
      },
    ];
  },
};
