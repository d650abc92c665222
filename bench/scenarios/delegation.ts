import type { PendingScenario } from './scenario.js';

export const delegation: PendingScenario = {
  kind: 'pending',
  name: 'delegation',
  measures: 'The shipped delegation validator: validate the incoming token, issue one with an act claim.',
  pending:
    'the delegation validator is in (work in progress); its scenario needs a step that issues the incoming token before the load',
};
