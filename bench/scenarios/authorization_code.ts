import type { PendingScenario } from './scenario.js';

export const authorizationCode: PendingScenario = {
  kind: 'pending',
  name: 'authorization_code',
  measures: 'Code redemption with PKCE: an atomic consume in the store, access + ID + refresh token.',
  pending:
    'the authorization_code grant landed after this bench was scoped; each request needs a fresh code (login, consent, PKCE), so its scenario needs a step that mints codes ahead of the load',
};
