import type { PendingScenario } from './scenario.js';

export const mixed: PendingScenario = {
  kind: 'pending',
  name: 'mixed',
  measures: 'A weighted mix of grants and endpoints as a deployment sees them.',
  pending:
    'it needs the password, refresh_token and authorization_code scenarios first',
};
