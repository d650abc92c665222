import { oidcProviderClientCredentials } from '../peers/peers.js';
import { clientCredentialsPlan } from './kinds.js';
import type { RequestFloor } from './floor.js';
import type { ActiveScenario } from './scenario.js';

/** One ES256 access token; no store command. */
export const clientCredentialsFloor: RequestFloor = { signatures: { ES256: 1 }, verifications: {}, store: [] };

export const clientCredentials: ActiveScenario = {
  kind: 'active',
  name: 'client_credentials',
  measures:
    'POST /connect/token, grant_type=client_credentials, client_secret_basic, one ES256 RFC 9068 access token per request; against node-oidc-provider doing the same.',
  server: 'tessera',
  // The grant reads and writes no store; Redis is measured to show its configuration costs nothing here.
  stores: ['memory', 'redis'],
  signing: 'ES256',
  plan: clientCredentialsPlan('ES256'),
  floor: clientCredentialsFloor,
  peers: [oidcProviderClientCredentials],
};
