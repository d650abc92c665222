/**
 * A route's `:parameter` as uWS hands it over (still percent-encoded, RFC 3986 §2.1), decoded; a
 * malformed escape is kept as sent, so that a lookup of it finds nothing rather than throwing.
 */
export function decodePathParameter(raw: string | undefined): string {
  if (raw === undefined) return '';
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}
