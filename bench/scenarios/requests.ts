/** The requests scenarios send, built as the load generators replay them. */
import type { LoadRequest } from '../load/load_generator.js';

// The tests' Basic header (RFC 6749 §2.3.1: id and secret form-urlencoded, then Base64), not a copy.
export { basicAuthorization } from '../../test/helpers/basic_authorization.js';

export function formPost(path: string, form: Record<string, string>, authorization?: string): LoadRequest {
  return {
    method: 'POST',
    path,
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      ...(authorization === undefined ? {} : { Authorization: authorization }),
    },
    body: new URLSearchParams(form).toString(),
  };
}

export function get(path: string): LoadRequest {
  return { method: 'GET', path, headers: {} };
}

/** Sends one request outside the load (a token a kind needs, a deep check), given `timeoutMs`. */
export function sendOnce(baseUrl: string, request: LoadRequest, timeoutMs: number): Promise<Response> {
  return fetch(baseUrl + request.path, {
    method: request.method,
    headers: request.headers,
    ...(request.body === undefined ? {} : { body: request.body }),
    signal: AbortSignal.timeout(timeoutMs),
  });
}
