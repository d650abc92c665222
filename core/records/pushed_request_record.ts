/**
 * A pushed authorization request (RFC 9126): the validated parameters the pushed authorization
 * request endpoint stored under a `request_uri`, which the authorization endpoint consumes once.
 */
import { hashHandle, newHandle } from '../store/handle.js';
import type { StoreKey } from '../store/store.js';

/** RFC 9126 §2.2: the `request_uri` names the stored request with this URN prefix. */
export const requestUriPrefix = 'urn:ietf:params:oauth:request_uri:';

export interface PushedRequestRecord {
  readonly v: 1;
  /** RFC 9126 §4: the authorization request must name this client again. */
  readonly clientId: string;
  /** The authorization parameters, form-encoded (from a request object's claims when it had one). */
  readonly query: string;
  /** Whether they came from a signed request object (RFC 9101), for `requireSignedRequestObject`. */
  readonly signed: boolean;
}

/** A new `request_uri`: 256 random bits (RFC 9126 §7.1: not guessable), and its store key. */
export function newRequestUri(): { requestUri: string; key: StoreKey } {
  const handle = newHandle();
  return { requestUri: `${requestUriPrefix}${handle}`, key: pushedRequestKey(handle) };
}

/** The store key of a `request_uri`, or `undefined` when it is not one Tessera issues. */
export function requestUriKey(requestUri: string): StoreKey | undefined {
  if (!requestUri.startsWith(requestUriPrefix)) return undefined;
  const handle = requestUri.slice(requestUriPrefix.length);
  return /^[A-Za-z0-9_-]{43}$/.test(handle) ? pushedRequestKey(handle) : undefined;
}

// Keyed by the SHA-256 of the handle, as every handle is (docs/storage.md).
function pushedRequestKey(handle: string): StoreKey {
  return { kind: 'par', id: hashHandle(handle) };
}
