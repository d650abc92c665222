import { addBenchUser, addClients } from '../support/bench_config.js';
import { clientCredentialsFloor } from './client_credentials.js';
import { clientCredentialsPlan, passwordPlan } from './kinds.js';
import type { ActiveScenario } from './scenario.js';

/**
 * Flood connections. The password lane holds `workers.passwordConcurrency` [4] running and
 * `workers.passwordMaxQueue` [256] waiting: 256 connections would only fill it, never overflow it.
 * 512 keep it full and overflow it by about 250, so the flood gets both answers it can get: tokens
 * (after a wait in the queue) and at-once 503s.
 */
const floodConnections = 512;

export const clientCredentialsSigninFlood: ActiveScenario = {
  kind: 'active',
  name: 'client_credentials_signin_flood',
  measures: `client_credentials exactly as in its own scenario, measured alone and, in another gateway process of the same config, while a second load generator floods the password grant (${floodConnections} connections of grant_type=password for the bench user, ro.client): the flood fills the password lane and is shed with 503 + Retry-After beyond it, and ignores Retry-After as a flood would. The two rows per store show what the flood costs client_credentials.`,
  server: 'tessera',
  // client_credentials touches no store; the flood's sign-ins do (throttle, refresh tokens).
  stores: ['memory', 'redis'],
  signing: 'ES256',
  configure(config) {
    addClients(config, 'ro');
    addBenchUser(config);
  },
  plan: clientCredentialsPlan('ES256'),
  // The rows alone; a row under the flood counts the flood's CPU too and gets no multiple.
  floor: clientCredentialsFloor,
  background: {
    name: 'sign-in flood',
    kind: 'signin_flood',
    connections: floodConnections,
    plan: passwordPlan(),
    // The password lane's overflow (docs/operations.md, "Lanes").
    shed: { status: 503, bodyPrefix: '{"error":"temporarily_unavailable"' },
  },
};
