import { connect } from 'node:net';

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
