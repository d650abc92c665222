import type { TaskFacts } from '../../../wire/task_facts.js';
import type { Exchange } from '../../http/exchange.js';
import { endpointPaths } from '../../endpoints/endpoint_paths.js';
import type { MetricsEndpoint } from '../metrics.js';

/** The path each endpoint's log lines, events and spans name: the one path table's. */
export const outcomePaths: Readonly<Record<MetricsEndpoint, string>> = {
  token: endpointPaths.token,
  introspection: endpointPaths.introspection,
  revocation: endpointPaths.revocation,
  device_authorization: endpointPaths.deviceAuthorization,
  pushed_authorization: endpointPaths.pushedAuthorization,
};
/**
 * An answered request as its log line and its audit events see it: read off the exchange once,
 * and only when one of them is wanted (the address lookup is not free).
 */
export interface AnsweredRequest {
  readonly endpoint: MetricsEndpoint;
  readonly path: string;
  readonly status: number;
  /** The answer's `error` code, on failures. */
  readonly error: string | undefined;
  readonly remoteAddress: string;
  readonly clientId: string | undefined;
  readonly grantType: string | undefined;
  /** Set when client authentication refused the request; `blocked` by the failure throttle. */
  readonly authFailure: Exchange['authFailure'];
  /** What the worker learned (wire/task_facts.ts). */
  readonly facts: TaskFacts | undefined;
}
