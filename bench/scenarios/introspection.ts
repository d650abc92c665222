import { addIntrospectionSecret } from '../support/bench_config.js';
import { introspectionKind } from './kinds.js';
import { oncePerRequest, type RequestFloor } from './floor.js';
import type { ActiveScenario } from './scenario.js';

/** A presented ES256 token verified, and its jti looked up in the deny list (absent) on Redis; nothing signed. */
export const presentedTokenFloor: RequestFloor = {
  signatures: {},
  verifications: { ES256: 1 },
  store: oncePerRequest({ op: 'get', bytes: 0 }),
};

export const introspection: ActiveScenario = {
  kind: 'active',
  name: 'introspection',
  measures:
    'POST /connect/introspect (RFC 7662) by the API resource urn:api1 (Basic) of a valid access token issued for it (one client_credentials token, obtained before the load): signature, expiry and the store\'s deny list checked in a worker, answered {"active":true,…} with the token\'s claims.',
  server: 'tessera',
  stores: ['memory', 'redis'],
  signing: 'ES256',
  configure: addIntrospectionSecret,
  workload: async (server) => [await introspectionKind(server)],
  floor: presentedTokenFloor,
};
