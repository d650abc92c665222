import { verifyJsonMember } from './checks.js';
import { get } from './requests.js';
import type { ActiveScenario } from './scenario.js';

export const discovery: ActiveScenario = {
  kind: 'active',
  name: 'discovery',
  measures: 'GET /.well-known/openid-configuration: a prebuilt body from the uWS thread, no worker hop.',
  server: 'tessera',
  stores: [],
  // A prebuilt body: the bare uWS request is all of it.
  floor: { signatures: {}, verifications: {}, store: [] },
  plan: {
    request: get('/.well-known/openid-configuration'),
    expect: { status: 200, bodyPrefix: '{"issuer":"' },
    verify: verifyJsonMember('token_endpoint'),
  },
};
