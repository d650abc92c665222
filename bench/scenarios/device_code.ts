import type { PendingScenario } from './scenario.js';

export const deviceCode: PendingScenario = {
  kind: 'pending',
  name: 'device_code',
  measures: 'Device-flow polling (RFC 8628): pending answers and approved-code redemption.',
  pending:
    'the device_code grant landed after this bench was scoped; its scenario needs a step that approves device codes before the load',
};
