import { tokenResponse, verifyJsonMember } from './checks.js';
import { clientCredentialsPlan } from './kinds.js';
import type { ActiveScenario } from './scenario.js';

export const ceiling: ActiveScenario = {
  kind: 'active',
  name: 'ceiling',
  measures:
    'The upper bound of the front end on this machine: a bare uWebSockets.js POST endpoint that reads the body, parses the form and returns a fixed token-sized JSON (bench/ceiling_process.ts).',
  server: 'ceiling',
  stores: [],
  plan: {
    // The request client_credentials sends; the answer is token-shaped, not a signed token.
    request: clientCredentialsPlan().request,
    expect: tokenResponse,
    verify: verifyJsonMember('access_token'),
  },
};
