import type { PendingScenario } from './scenario.js';

export const tokenExchange: PendingScenario = {
  kind: 'pending',
  name: 'token_exchange',
  measures: 'RFC 8693 token exchange.',
  pending: 'the token_exchange grant has not landed',
};
