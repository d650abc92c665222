import { connect, type Socket } from 'node:net';
import { basicAuthorization } from './basic_authorization.js';

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends the same HTTP/1.1 request once per entry of `ports`, each on its own socket held back one
 * byte short of its end until every socket has written the rest; then the last bytes go out in
 * one loop, so the gateways see all requests complete within the same moment. For races that
 * must be real (docs/storage.md "Guarantees": of any number of concurrent redemptions exactly one succeeds).
 */
export async function releaseAtOnce(ports: readonly number[], request: Buffer): Promise<RawAnswer[]> {
  const head = request.subarray(0, request.length - 1);
  const last = request.subarray(request.length - 1);
  const sockets: Socket[] = [];
  const answers: Promise<RawAnswer>[] = [];
  const primed: Promise<void>[] = [];
  for (const port of ports) {
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    answers.push(readAnswer(socket));
    primed.push(
      new Promise((resolve, reject) => socket.once('connect', () => socket.write(head, (err) => (err ? reject(err) : resolve())))),
    );
  }
  await Promise.all(primed);
  // Let the gateways parse the headers and wait for the body's last byte.
  await new Promise((resolve) => setTimeout(resolve, 50));
  for (const socket of sockets) socket.write(last);
  return Promise.all(answers);
}

/** A form POST with HTTP Basic client authentication, as raw bytes; `headers` go before the body's (e.g. `Origin`). */
export function formPost(
  path: string,
  params: Record<string, string>,
  basic?: { clientId: string; secret: string },
  headers: Readonly<Record<string, string>> = {},
): Buffer {
  const body = new URLSearchParams(params).toString();
  const authorization = basic === undefined ? '' : `Authorization: ${basicAuthorization(basic.clientId, basic.secret)}\r\n`;
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return Buffer.from(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${authorization}${extra}` +
      `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

function readAnswer(socket: Socket): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const tryParse = (): boolean => {
      const all = Buffer.concat(chunks);
      const end = all.indexOf('\r\n\r\n');
      if (end === -1) return false;
      const [statusLine, ...lines] = all.subarray(0, end).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
      const length = Number(headers['content-length'] ?? 0);
      const rest = all.subarray(end + 4);
      if (rest.length < length) return false;
      socket.destroy();
      resolve({ status: Number(statusLine?.split(' ')[1]), headers, body: rest.subarray(0, length).toString('utf8') });
      return true;
    };
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      tryParse();
    });
    socket.on('error', reject);
    socket.on('close', () => {
      if (!tryParse()) reject(new Error('connection closed before a complete answer'));
    });
  });
}
