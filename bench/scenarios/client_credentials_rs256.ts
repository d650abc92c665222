import { clientCredentialsPlan } from './kinds.js';
import type { ActiveScenario } from './scenario.js';

export const clientCredentialsRs256: ActiveScenario = {
  kind: 'active',
  name: 'client_credentials_rs256',
  measures: 'The client_credentials request with an RSA-2048 key: RS256 signing costs several times ES256.',
  server: 'tessera',
  stores: ['memory', 'redis'],
  signing: 'RS256',
  plan: clientCredentialsPlan('RS256'),
  // One RS256 access token; no store command.
  floor: { signatures: { RS256: 1 }, verifications: {}, store: [] },
};
