import { isUtf8 } from 'node:buffer';
import type { FormParams } from '../../workers/protocol/token_task.js';

export type { FormParams };

/** Why a body was rejected; each maps to `invalid_request` with a fixed description. */
export type FormParseFailure = 'encoding' | 'duplicate' | 'too_many';

export type FormParseResult = { ok: true; params: FormParams } | { ok: false; reason: FormParseFailure };

/**
 * Parameters that may repeat (RFC 8707 §2: `resource`, one per target). Their values are kept
 * joined by a space, which a URI cannot contain (RFC 3986 §2); a space inside one value becomes a
 * tab, which no URI contains either, so that the value stays one malformed URI and never becomes two.
 */
const repeatable: ReadonlySet<string> = new Set(['resource']);

/** More parameters than any grant needs; beyond it the request is refused, never truncated. */
export const maxFormParameters = 128;

/**
 * Strict form decoding for the token endpoints (RFC 6749 Appendix B, WHATWG urlencoded):
 * `+` is a space, percent-escapes must be well formed, and the decoded text must be valid UTF-8.
 * Parameters are not repeated (RFC 6749 §3.2) except `resource` (see {@link repeatable}), and
 * one sent without a value counts as omitted.
 */
export function parseForm(body: Uint8Array): FormParseResult {
  if (!isUtf8(body)) return { ok: false, reason: 'encoding' };
  const params: FormParams = Object.create(null) as FormParams;
  // A name seen once, with or without value: repeated names are refused even when one is empty.
  let seen: Set<string> | undefined;
  let count = 0;
  const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  let start = 0;
  const length = text.length;
  while (start <= length) {
    let end = text.indexOf('&', start);
    if (end === -1) end = length;
    if (end > start) {
      if (++count > maxFormParameters) return { ok: false, reason: 'too_many' };
      const segment = text.slice(start, end);
      const eq = segment.indexOf('=');
      const rawName = eq === -1 ? segment : segment.slice(0, eq);
      const rawValue = eq === -1 ? '' : segment.slice(eq + 1);
      const name = decodeComponent(rawName);
      const value = decodeComponent(rawValue);
      if (name === null || value === null) return { ok: false, reason: 'encoding' };
      if (name.length > 0 && repeatable.has(name)) {
        if (value.length > 0) {
          const one = value.replaceAll(' ', '\t');
          const before = params[name];
          params[name] = before === undefined ? one : `${before} ${one}`;
        }
      } else if (name.length > 0) {
        seen ??= new Set();
        if (seen.has(name)) return { ok: false, reason: 'duplicate' };
        seen.add(name);
        if (value.length > 0) params[name] = value;
      }
    }
    start = end + 1;
  }
  return { ok: true, params };
}

// decodeURIComponent rejects malformed escapes and escaped byte sequences that are not UTF-8.
function decodeComponent(raw: string): string | null {
  const plus = raw.includes('+') ? raw.replaceAll('+', ' ') : raw;
  if (!plus.includes('%')) return plus;
  try {
    return decodeURIComponent(plus);
  } catch {
    return null;
  }
}
