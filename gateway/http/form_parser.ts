import { isAscii, isUtf8 } from 'node:buffer';
import type { FormParams } from '../../wire/token_task.js';

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
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  // Forms are ASCII unless a client sends raw non-ASCII bytes (escaped text is ASCII too): latin1
  // decodes those at a byte a character, where a UTF-8 decode must check every sequence.
  let text: string;
  if (isAscii(bytes)) text = bytes.toString('latin1');
  else if (isUtf8(bytes)) text = bytes.toString('utf8');
  else return { ok: false, reason: 'encoding' };
  const params: FormParams = Object.create(null) as FormParams;
  // Names sent without a value: they are not in `params`, and a repeat of one is still refused.
  let empty: string[] | undefined;
  let count = 0;
  let start = 0;
  const length = text.length;
  while (start <= length) {
    let end = text.indexOf('&', start);
    if (end === -1) end = length;
    if (end > start) {
      if (++count > maxFormParameters) return { ok: false, reason: 'too_many' };
      let eq = text.indexOf('=', start);
      if (eq === -1 || eq > end) eq = end;
      const name = decodeComponent(text.slice(start, eq));
      const value = eq === end ? '' : decodeComponent(text.slice(eq + 1, end));
      if (name === null || value === null) return { ok: false, reason: 'encoding' };
      if (name.length > 0 && repeatable.has(name)) {
        if (value.length > 0) {
          const one = value.replaceAll(' ', '\t');
          const before = params[name];
          params[name] = before === undefined ? one : `${before} ${one}`;
        }
      } else if (name.length > 0) {
        if (params[name] !== undefined || empty?.includes(name) === true) return { ok: false, reason: 'duplicate' };
        if (value.length > 0) params[name] = value;
        else (empty ??= []).push(name);
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
