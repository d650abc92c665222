/**
 * Which requests the gateway may run a second time, on another thread, after the thread running
 * them died or was terminated (docs/operations.md, "Worker faults").
 *
 * A request that never started is always safe. A request that started may have done something
 * that must happen once: redeemed a single-use code or refresh token (RFC 6749 §10.5, RFC 9700
 * §4.14.2), counted a failed password, or called whatever a validator calls. Running it again
 * could revoke a refresh family or double an effect, so it is answered instead, with 503 and
 * `Retry-After` for the client to decide. `client_credentials` has no such step: it reads no store
 * and runs no custom code, so issuing it again only signs a token no one received.
 */
import type { TaskItem } from './token_task.js';

export function mayRunAgainAfterStart(item: TaskItem): boolean {
  // A client assertion's or a DPoP proof's jti may already be spent: a second run would be refused as a replay.
  return item.kind === 'token' && item.grantType === 'client_credentials' && item.clientAssertion === undefined && item.dpop === undefined;
}
