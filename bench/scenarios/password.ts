import type { PendingScenario } from './scenario.js';

export const password: PendingScenario = {
  kind: 'pending',
  name: 'password',
  measures: 'POST /connect/token, grant_type=password: user lookup, password hash check, access + refresh token.',
  pending:
    'the password grant landed after this bench was scoped; its scenario (a bench user with an argon2id hash in the config) is not written yet',
};
