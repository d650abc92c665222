import { verifyJsonMember } from './checks.js';
import { get } from './requests.js';
import type { ActiveScenario } from './scenario.js';

export const jwks: ActiveScenario = {
  kind: 'active',
  name: 'jwks',
  measures: 'GET /.well-known/openid-configuration/jwks: a prebuilt body from the uWS thread, no worker hop.',
  server: 'tessera',
  stores: [],
  // A prebuilt body: the bare uWS request is all of it.
  floor: { signatures: {}, verifications: {}, store: [] },
  plan: {
    request: get('/.well-known/openid-configuration/jwks'),
    expect: { status: 200, bodyPrefix: '{"keys":[{' },
    verify: verifyJsonMember('keys'),
  },
};
