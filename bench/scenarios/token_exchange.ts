import path from 'node:path';
import { addBenchUser, addClients, benchClients, benchUser } from '../support/bench_config.js';
import { obtainAccessToken } from './kinds.js';
import { subjectIs, tokenExpectation, verifyAccessTokenResponse } from './checks.js';
import { basicAuthorization, formPost } from './requests.js';
import { presentedTokenFloor } from './introspection.js';
import type { ActiveScenario } from './scenario.js';

const grantType = 'urn:ietf:params:oauth:grant-type:token-exchange';
const accessTokenType = 'urn:ietf:params:oauth:token-type:access_token';
const issuedType = `"issued_token_type":"${accessTokenType}"`;

export const tokenExchange: ActiveScenario = {
  kind: 'active',
  name: 'token_exchange',
  measures:
    "POST /connect/token, RFC 8693 token exchange (exchanger, Basic): the bench user's api1 access token (one, from the password grant before the load) as subject_token, scope=api2, no actor token (impersonation). The shipped validator (validators/token_exchange.ts) checks the request and the subject token (signature, expiry, the store's deny list); an ES256 token for api2 is issued with issued_token_type.",
  server: 'tessera',
  stores: ['memory', 'redis'],
  signing: 'ES256',
  // The presented token verified and looked up in the deny list, and one ES256 token issued.
  floor: { ...presentedTokenFloor, signatures: { ES256: 1 } },
  configure(config, { gatewayRoot }) {
    addClients(config, 'frontend', 'exchanger');
    addBenchUser(config);
    config.validatorsDir = path.join(gatewayRoot, 'validators');
  },
  async workload(server) {
    const subjectToken = await obtainAccessToken(server, 'user', 'api1');
    return [
      {
        name: 'token_exchange',
        weight: 1,
        request: formPost(
          '/connect/token',
          { grant_type: grantType, subject_token: subjectToken, subject_token_type: accessTokenType, scope: 'api2' },
          basicAuthorization(benchClients.exchanger.clientId, benchClients.exchanger.secret),
        ),
        expect: tokenExpectation({ refreshToken: false, contains: [issuedType] }),
        verify: verifyAccessTokenResponse('ES256', 'api2', {
          refreshToken: false,
          contains: [issuedType],
          claims: (payload) => {
            const sub = subjectIs(benchUser.subject)(payload);
            if (sub !== null) return sub;
            return payload.act === undefined ? null : `an act claim in an impersonation: ${JSON.stringify(payload.act)}`;
          },
        }),
      },
    ];
  },
};
