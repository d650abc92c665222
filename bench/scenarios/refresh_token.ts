import type { PendingScenario } from './scenario.js';

export const refreshToken: PendingScenario = {
  kind: 'pending',
  name: 'refresh_token',
  measures: 'POST /connect/token, grant_type=refresh_token with one-time rotation in the store; against node-oidc-provider.',
  pending:
    'the refresh_token grant landed after this bench was scoped; its scenario needs a step that obtains refresh tokens before the load (one-time rotation voids a replayed token) and the node-oidc-provider refresh_token peer',
};
