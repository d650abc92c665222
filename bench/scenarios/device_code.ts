import { addClients } from '../support/bench_config.js';
import { devicePollKind } from './kinds.js';
import { oncePerRequest } from './floor.js';
import type { ActiveScenario } from './scenario.js';

/** Pending device codes polled in turn: at 30k req/s each comes round every 3 s (interval 1 s). */
const poolSize = 90_000;

export const deviceCode: ActiveScenario = {
  kind: 'active',
  name: 'device_code',
  measures:
    'POST /connect/token, grant_type=device_code (tv, public client) polling device codes whose user has not approved yet: the answer expected is 400 authorization_pending (RFC 8628 §3.5), the steady state of the device flow. Each poll tries the one-call redemption of the code (handed back: not approved), reads its poll state and writes it (the interval check that answers slow_down); 90,000 seeded codes are polled in turn, so none is polled twice within its 1 s interval.',
  server: 'tessera',
  stores: ['memory', 'redis'],
  configure(config) {
    addClients(config, 'tv');
  },
  workload: () => Promise.resolve([devicePollKind(poolSize)]),
  // No token: on Redis the one-call redemption (issue 33), which hands the pending code back
  // unchecked, the read of its poll state, and the write of the poll state.
  floor: {
    signatures: {},
    verifications: {},
    store: oncePerRequest(
      { op: 'redeemRecord', record: 'pendingDeviceCode', bytes: 103 },
      { op: 'get', bytes: 34 },
      { op: 'write', family: true, ifAbsent: false, bytes: 34 },
    ),
  },
};
