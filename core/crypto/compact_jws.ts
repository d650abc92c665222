/**
 * The parts of a compact JWS (RFC 7515 §7.1) and the JSON objects in them, decoded before anything
 * in them is trusted: for every JWS this service verifies on node:crypto (DPoP proofs, its own
 * access tokens). The signature itself is core/crypto/jws_signature.ts.
 */

/** The three encoded parts, as sent: the signing input is `header.payload` of exactly these. */
export interface CompactJwsParts {
  readonly header: string;
  readonly payload: string;
  readonly signature: string;
}

// RFC 7515 §2: base64url without padding (jose refuses `+` and `/` too). Empty parts pass here
// and fail as what they are: an empty header or payload is not JSON, an empty signature does not verify.
const base64url = /^[A-Za-z0-9_-]*$/;
// RFC 8259 §8.1: JSON text exchanged between systems is UTF-8; a malformed sequence is refused,
// not replaced (as jose decodes it).
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Three base64url parts separated by dots, or `undefined`. */
export function splitCompactJws(jws: string): CompactJwsParts | undefined {
  const parts = jws.split('.');
  if (parts.length !== 3) return undefined;
  const [header, payload, signature] = parts as [string, string, string];
  if (!base64url.test(header) || !base64url.test(payload) || !base64url.test(signature)) return undefined;
  return { header, payload, signature };
}

/** The JSON object a base64url part encodes, or `undefined` when it is not UTF-8 JSON or not an object. */
export function decodeJsonObject(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(utf8.decode(Buffer.from(part, 'base64url')));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** What the signature covers (RFC 7515 §5.2 step 8): ASCII, as the parts were checked to be. */
export function signingInputOf(parts: CompactJwsParts): Buffer {
  return Buffer.from(`${parts.header}.${parts.payload}`, 'latin1');
}
