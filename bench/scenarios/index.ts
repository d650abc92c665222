/**
 * Every bench scenario, in the order `npm run bench` runs them. Adding one: a file in this
 * folder exporting a `Scenario` (see scenario.ts), and a line here.
 */
import { authorizationCode } from './authorization_code.js';
import { ceiling } from './ceiling.js';
import { clientCredentials } from './client_credentials.js';
import { clientCredentialsPrivateKeyJwt } from './client_credentials_private_key_jwt.js';
import { clientCredentialsRs256 } from './client_credentials_rs256.js';
import { clientCredentialsSigninFlood } from './client_credentials_signin_flood.js';
import { delegation } from './delegation.js';
import { deviceCode } from './device_code.js';
import { discovery } from './discovery.js';
import { introspection } from './introspection.js';
import { jwks } from './jwks.js';
import { mixed } from './mixed.js';
import { password } from './password.js';
import { passwordCheapHash } from './password_cheap_hash.js';
import { refreshToken } from './refresh_token.js';
import type { Scenario } from './scenario.js';
import { tokenExchange } from './token_exchange.js';

export const scenarios: readonly Scenario[] = [
  clientCredentials,
  clientCredentialsRs256,
  clientCredentialsPrivateKeyJwt,
  jwks,
  discovery,
  ceiling,
  password,
  passwordCheapHash,
  clientCredentialsSigninFlood,
  refreshToken,
  authorizationCode,
  deviceCode,
  delegation,
  tokenExchange,
  introspection,
  mixed,
];

export function findScenario(name: string): Scenario | undefined {
  return scenarios.find((scenario) => scenario.name === name);
}
