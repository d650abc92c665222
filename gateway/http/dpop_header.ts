import type { HttpRequest } from 'uWebSockets.js';

/**
 * The `DPoP` request header (RFC 9449 §4.1): `''` when absent, `null` when sent more than once
 * (refused by RFC 9449 §4.3 check 1). uWS returns the first of repeated headers, so they are
 * counted, but only when there is one: a request without DPoP pays one header lookup.
 */
export function readDPoPHeader(req: HttpRequest): string | null {
  const proof = req.getHeader('dpop');
  if (proof.length === 0) return proof;
  let count = 0;
  req.forEach((name) => {
    if (name === 'dpop') count++;
  });
  return count === 1 ? proof : null;
}
