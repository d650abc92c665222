import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends bytes over a plain socket and parses the first HTTP/1.1 response: for what fetch cannot
 * send (a body larger than the server reads, an abort half-way through the body).
 */
export function rawRequest(port: number, parts: (string | Buffer)[], options: { endAfterWrite?: boolean } = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = () => {
      if (settled) return;
      const text = Buffer.concat(chunks).toString('utf8');
      const headerEnd = text.indexOf('\r\n\r\n');
      if (headerEnd === -1) return;
      const [statusLine, ...headerLines] = text.slice(0, headerEnd).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of headerLines) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      const length = Number(headers['content-length'] ?? -1);
      const body = text.slice(headerEnd + 4);
      if (length >= 0 && Buffer.byteLength(body) < length) return;
      settled = true;
      socket.destroy();
      resolve({ status: Number(statusLine?.split(' ')[1]), headers, body: length >= 0 ? body.slice(0, length) : body });
    };
    socket.on('data', (d) => {
      chunks.push(d);
      finish();
    });
    // The server may answer and close while we are still writing: that is the behaviour under test.
    socket.on('error', (err) => {
      finish();
      if (!settled) reject(err);
    });
    socket.on('close', () => {
      finish();
      if (!settled) reject(new Error('connection closed without a complete response'));
    });
    socket.on('connect', () => {
      for (const part of parts) socket.write(part);
      if (options.endAfterWrite) socket.end();
    });
  });
}

/** Everything a server sent on one connection, and whether it closed the connection. */
export interface RawConversation {
  /** The bytes received, as latin1 text (one character per byte). */
  text: string;
  /** The server closed the connection before `waitMs` passed. */
  closed: boolean;
  /** The status codes of the responses in `text`, in order. */
  statuses: number[];
}

/**
 * Writes `bytes` on a fresh connection and collects whatever comes back until the server closes
 * the connection or `waitMs` passes, for what a response-at-a-time client hides: a second,
 * smuggled response, a body after a HEAD answer, a connection left open.
 */
export function rawConversation(port: number, bytes: string | Buffer, waitMs = 2_000): Promise<RawConversation> {
  // Written at once: a plain socket queues it until connected, and a refused connection is a close.
  return rawConversationOver(() => connect(port, '127.0.0.1'), [bytes], { waitMs });
}

/**
 * {@link rawConversation} over the socket `open` gives (plain or TLS, from any source address; a
 * promise of it resolves once it can be written), with `parts` written one at a time `pauseMs` apart, so that each
 * reaches the server in a read of its own: a request split across TCP segments or TLS records.
 */
export async function rawConversationOver(
  open: () => Socket | Promise<Socket>,
  parts: readonly (string | Buffer)[],
  options: { waitMs?: number; pauseMs?: number } = {},
): Promise<RawConversation> {
  const { waitMs = 2_000, pauseMs = 0 } = options;
  const opened = open();
  // A socket given as it is gets its listeners in this same turn, before any error can be emitted.
  const socket = opened instanceof Promise ? await opened : opened;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
      resolve({ text, closed, statuses });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    void (async () => {
      for (const [i, part] of parts.entries()) {
        if (i > 0 && pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
        if (done) return;
        socket.write(part);
      }
    })();
  });
}

/** The header section and the bytes after it of the first response in `text`. */
export function splitFirstResponse(text: string): { headers: Record<string, string>; rest: string } {
  const end = text.indexOf('\r\n\r\n');
  const headers: Record<string, string> = {};
  for (const line of text.slice(0, end).split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { headers, rest: text.slice(end + 4) };
}
