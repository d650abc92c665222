import type { PendingScenario } from './scenario.js';

export const introspection: PendingScenario = {
  kind: 'pending',
  name: 'introspection',
  measures: 'POST /connect/introspect (RFC 7662) by an API resource, deny-list lookup in the store.',
  pending:
    'the introspection endpoint landed after this bench was scoped; its scenario needs a step that issues the token to introspect before the load',
};
