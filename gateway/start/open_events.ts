import type { AuditEvents } from '../observability/events/audit_events.js';
import { openAuditEvents } from '../observability/events/open_audit_events.js';
import type { GatewayState } from './gateway_state.js';

/**
 * The audit events (docs/operations.md, "Events"): the config's sinks and the embedding code's
 * `onEvent` hook; with several processes each event carries the process index.
 */
export async function openEvents(state: GatewayState): Promise<AuditEvents> {
  const { options } = state;
  const hooks = options.onEvent === undefined ? [] : [options.onEvent];
  state.events = await openAuditEvents(state.config, hooks, state.logger, state.processSlot?.index);
  return state.events;
}
