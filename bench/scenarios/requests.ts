/** The requests scenarios send, built as the load generators replay them. */
import type { LoadRequest } from '../load/load_generator.js';

/** RFC 6749 §2.3.1: id and secret are form-urlencoded before Base64. */
export function basicAuthorization(clientId: string, secret: string): string {
  const encode = (value: string): string => encodeURIComponent(value).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(secret)}`).toString('base64')}`;
}

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
