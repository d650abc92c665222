import { benchClient } from '../support/bench_config.js';
import { verifyJsonMember } from './checks.js';
import { basicAuthorization, formPost } from './requests.js';
import type { ActiveScenario } from './scenario.js';

export const ceiling: ActiveScenario = {
  kind: 'active',
  name: 'ceiling',
  measures:
    'The upper bound of the front end on this machine: a bare uWebSockets.js POST endpoint that reads the body, parses the form and returns a fixed token-sized JSON (bench/ceiling_process.ts).',
  server: 'ceiling',
  stores: [],
  plan: {
    request: formPost(
      '/connect/token',
      { grant_type: 'client_credentials', scope: benchClient.scope },
      basicAuthorization(benchClient.clientId, benchClient.secret),
    ),
    expect: { status: 200, bodyPrefix: '{"access_token":"' },
    verify: verifyJsonMember('access_token'),
  },
};
