/**
 * Keep-alive load over raw sockets, counted request by request: for the lifecycle tests, which
 * must tell an answered request from one lost with its connection. Each connection sends its next
 * request as soon as the previous answer arrived, on the same connection unless the answer said
 * `Connection: close`; then it connects again while `reconnect()` says so (a balancer that still
 * routes to this gateway), else it ends.
 */
import { connect, type Socket } from 'node:net';

export interface KeepAliveLoadOptions {
  readonly port: number;
  readonly connections: number;
  /**
   * The whole request, as written on the wire (one request, no pipelining); or, per request, the
   * next one connection `connection` sends (loads over many clients).
   */
  readonly request: string | ((connection: number) => string);
  /** Told every complete answer, with the request it answers (per-client tallies). */
  readonly onAnswer?: (status: number, request: string) => void;
  /** Whether a connection the server closed connects again; default: always. */
  readonly reconnect?: () => boolean;
}

export interface KeepAliveLoad {
  /** Requests written. */
  readonly sent: number;
  /** Complete answers read. */
  readonly answered: number;
  /** Answers by status. */
  readonly statuses: ReadonlyMap<number, number>;
  /** Requests written whose connection ended before their answer arrived. */
  readonly lost: number;
  /** How each lost request's connection ended, for the failure message. */
  readonly lostHow: readonly string[];
  /** Connection attempts refused (the listener had stopped). */
  readonly refused: number;
  /** Answers that carried `Connection: close`. */
  readonly closing: number;
  /** Most answers without `Connection: close` any one connection read since {@link mark}. */
  keptOpenSinceMark(): number;
  /** Starts counting {@link keptOpenSinceMark} from now. */
  mark(): void;
  /** Stops sending and resolves once every connection has read its last answer and closed. */
  stop(): Promise<void>;
  /** Resolves once every connection has ended (by {@link stop}, or the server closed it for good). */
  readonly ended: Promise<void>;
}

export function startKeepAliveLoad(options: KeepAliveLoadOptions): KeepAliveLoad {
  const reconnect = options.reconnect ?? (() => true);
  const statuses = new Map<number, number>();
  const lostHow: string[] = [];
  let sent = 0;
  let answered = 0;
  let lost = 0;
  let refused = 0;
  let closing = 0;
  let stopping = false;
  const keptOpen: number[] = [];
  const endings: Promise<void>[] = [];

  for (let i = 0; i < options.connections; i++) {
    keptOpen.push(0);
    endings.push(
      new Promise<void>((resolveEnded) => {
        const open = (): void => {
          const socket: Socket = connect(options.port, '127.0.0.1');
          socket.setNoDelay(true);
          let buffer: Buffer = Buffer.alloc(0);
          let pending = false;
          let connected = false;
          let closeAfterAnswer = false;
          let how = 'closed';
          let written = '';
          const send = (): void => {
            pending = true;
            sent++;
            written = typeof options.request === 'string' ? options.request : options.request(i);
            socket.write(written);
          };
          socket.on('connect', () => {
            connected = true;
            if (stopping) socket.end();
            else send();
          });
          socket.on('data', (chunk: Buffer) => {
            buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
            for (;;) {
              const headerEnd = buffer.indexOf('\r\n\r\n');
              if (headerEnd === -1) return;
              const head = buffer.subarray(0, headerEnd).toString('latin1');
              const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
              if (buffer.length < headerEnd + 4 + length) return;
              buffer = buffer.subarray(headerEnd + 4 + length);
              const status = Number(head.slice(9, 12));
              const close = /\r\nconnection: *close/i.test(head);
              pending = false;
              answered++;
              statuses.set(status, (statuses.get(status) ?? 0) + 1);
              options.onAnswer?.(status, written);
              if (close) {
                closing++;
                closeAfterAnswer = true;
              } else keptOpen[i] = (keptOpen[i] as number) + 1;
              if (close || stopping) {
                socket.end();
                return;
              }
              send();
            }
          });
          socket.on('error', (err: NodeJS.ErrnoException) => {
            how = err.code ?? err.message;
          });
          socket.on('close', () => {
            if (!connected) {
              refused++;
              resolveEnded();
              return;
            }
            if (pending) {
              lost++;
              lostHow.push(how);
            }
            if (!stopping && (closeAfterAnswer || !pending) && reconnect()) open();
            else resolveEnded();
          });
        };
        open();
      }),
    );
  }
  const ended = Promise.all(endings).then(() => {});
  return {
    get sent() {
      return sent;
    },
    get answered() {
      return answered;
    },
    statuses,
    get lost() {
      return lost;
    },
    lostHow,
    get refused() {
      return refused;
    },
    get closing() {
      return closing;
    },
    keptOpenSinceMark: () => Math.max(...keptOpen),
    mark() {
      keptOpen.fill(0);
    },
    stop() {
      stopping = true;
      return ended;
    },
    ended,
  };
}

/** A `client_credentials` token request for a client authenticated with HTTP Basic, as raw bytes. */
export function clientCredentialsRequest(port: number, authorization: string): string {
  const body = 'grant_type=client_credentials&scope=api1';
  return (
    'POST /connect/token HTTP/1.1\r\n' +
    `Host: 127.0.0.1:${port}\r\n` +
    `Authorization: ${authorization}\r\n` +
    'Content-Type: application/x-www-form-urlencoded\r\n' +
    `Content-Length: ${body.length}\r\n` +
    '\r\n' +
    body
  );
}
