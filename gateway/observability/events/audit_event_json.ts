import type { AuditEvent } from './audit_event.js';

/**
 * One audit event as one line of JSON (RFC 8259), written member by member in a fixed order
 * rather than by `JSON.stringify` walking the object: the sinks write one per token request, and
 * this takes about half the time of the generic walk (docs/decisions/0012-audit-events-cost.md). Every text that can come from outside Tessera
 * goes through `JSON.stringify` of the string alone, which escapes quotes, backslashes, control
 * characters and lone surrogates (ECMA-262 well-formed `JSON.stringify`), unless it is printable
 * ASCII without a quote or a backslash, which JSON writes as it is (RFC 8259 §7); `time`, `id`, `name`,
 * `category` and `outcome` are made by Tessera (ISO 8601, a UUID, the closed lists of
 * audit_event.ts) and need no escaping. Members the event lacks are absent, as with
 * `JSON.stringify`.
 */
export function auditEventJson(event: AuditEvent): string {
  let json = `{"time":"${event.time}","id":"${event.id}","name":"${event.name}","category":"${event.category}","outcome":"${event.outcome}"`;
  if (event.clientId !== undefined) json += `,"clientId":${jsonString(event.clientId)}`;
  if (event.subject !== undefined) json += `,"subject":${jsonString(event.subject)}`;
  if (event.grantType !== undefined) json += `,"grantType":${jsonString(event.grantType)}`;
  if (event.jti !== undefined) json += `,"jti":${jsonString(event.jti)}`;
  if (event.remoteAddress !== undefined) json += `,"remoteAddress":${jsonString(event.remoteAddress)}`;
  if (event.endpoint !== undefined) json += `,"endpoint":${jsonString(event.endpoint)}`;
  if (event.username !== undefined) json += `,"username":${jsonString(event.username)}`;
  if (event.error !== undefined) json += `,"error":${jsonString(event.error)}`;
  if (event.details !== undefined) json += `,"details":${JSON.stringify(event.details)}`;
  if (event.process !== undefined) json += `,"process":${event.process}`;
  return `${json}}`;
}

/** Printable ASCII but `"` and `\`: the characters a JSON string holds unescaped (RFC 8259 §7). */
const plainJsonText = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** `text` as a JSON string; the test is cheaper than `JSON.stringify` on the identifiers events hold. */
function jsonString(text: string): string {
  return plainJsonText.test(text) ? `"${text}"` : JSON.stringify(text);
}
