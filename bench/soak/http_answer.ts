/**
 * The raw HTTP/1.1 both soak load processes speak: a request as the bytes of one write, and one
 * complete answer read off the front of what a connection has received. The gateway frames every
 * answer with Content-Length (uWS `end()`), which is all this reader handles.
 */
import type { LoadRequest } from '../load/load_generator.js';

/** One request as the bytes written at once (RFC 9112 §3, §6.2: Host, Content-Length). */
export function requestBytes(request: LoadRequest, body: string | undefined, port: number): Buffer {
  const payload = Buffer.from(body ?? request.body ?? '', 'utf8');
  const headers = Object.entries(request.headers).filter(([name]) => name.toLowerCase() !== 'content-length');
  const head = [
    `${request.method} ${request.path} HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    ...headers.map(([name, value]) => `${name}: ${value}`),
    ...(request.method === 'POST' ? [`Content-Length: ${payload.length}`] : []),
    '',
    '',
  ].join('\r\n');
  return Buffer.concat([Buffer.from(head, 'latin1'), payload]);
}

export interface Answer {
  status: number;
  /** The `Retry-After` header, when there is one (RFC 9110 §10.2.3). */
  retryAfter: string | undefined;
  body: string;
  /** Bytes the answer took, head and body. */
  length: number;
}

/** One complete answer at the start of `bytes`, or undefined while it has not all arrived. */
export function takeAnswer(bytes: Buffer): Answer | undefined {
  const end = bytes.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const [statusLine = '', ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  let length = 0;
  let retryAfter: string | undefined;
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    if (name === 'content-length') length = Number(line.slice(colon + 1).trim());
    else if (name === 'retry-after') retryAfter = line.slice(colon + 1).trim();
  }
  if (bytes.length < end + 4 + length) return undefined;
  return {
    status: Number(statusLine.split(' ')[1]),
    retryAfter,
    body: bytes.subarray(end + 4, end + 4 + length).toString('utf8'),
    length: end + 4 + length,
  };
}
