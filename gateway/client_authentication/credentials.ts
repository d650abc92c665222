/**
 * How a client presents its credentials (RFC 6749 §2.3.1): HTTP Basic, or `client_id` and
 * `client_secret` in the form body; a public client sends its `client_id` alone (§2.1); a client
 * with keys sends a signed JWT (`private_key_jwt`, RFC 7523 §2.2); a client with a certificate
 * method presents its TLS client certificate and its `client_id` (RFC 8705 §2).
 */
export type ClientAuthMethod =
  | 'client_secret_basic'
  | 'client_secret_post'
  | 'none'
  | 'private_key_jwt'
  /** RFC 8705 §2: the TLS client certificate, with `client_id` in the body. */
  | 'tls_client_auth'
  | 'self_signed_tls_client_auth';

/** Credentials from an `Authorization: Basic` header, already form-decoded. */
export interface BasicCredentials {
  clientId: string;
  clientSecret: string;
}

const base64 = /^[A-Za-z0-9+/]+={0,2}$/;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Decodes `Authorization: Basic` per RFC 6749 §2.3.1: the client id and secret are each
 * `application/x-www-form-urlencoded` (Appendix B) before they are joined with `:` and
 * Base64-encoded, so `:` inside either is escaped and the first raw `:` separates them.
 *
 * Returns `undefined` when the header is not Basic at all, `null` when it is Basic but malformed:
 * no credentials, not Base64, not UTF-8, no colon or an empty id, or a part that does not
 * form-decode (a `%` not followed by two hex digits, escapes that are not UTF-8).
 */
export function decodeBasicAuthorization(header: string): BasicCredentials | null | undefined {
  // RFC 9110 §11.4: the scheme is a case-insensitive token, then one or more spaces.
  const space = header.indexOf(' ');
  const scheme = space === -1 ? header : header.slice(0, space);
  if (scheme.length !== 5 || scheme.toLowerCase() !== 'basic') return undefined;
  const encoded = space === -1 ? '' : header.slice(space + 1).trim();
  if (!base64.test(encoded) || encoded.length % 4 !== 0) return null;
  const decoded = Buffer.from(encoded, 'base64');
  let text: string;
  try {
    text = strictUtf8.decode(decoded);
  } catch {
    return null;
  }
  const colon = text.indexOf(':');
  if (colon <= 0) return null;
  const clientId = formDecode(text.slice(0, colon));
  const clientSecret = formDecode(text.slice(colon + 1));
  if (clientId === null || clientSecret === null || clientId.length === 0) return null;
  return { clientId, clientSecret };
}

// Appendix B decoding: `+` is a space, then percent-escapes, which must be well formed and UTF-8.
function formDecode(raw: string): string | null {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' '));
  } catch {
    return null;
  }
}
