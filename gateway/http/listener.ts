import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { createSecureContext } from 'node:tls';
import * as uWS from 'uWebSockets.js';

/** The certificate and key files of a TLS listener (config `tls`, absolute paths). */
export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /**
   * `mtls.caFile`: clients are asked for a certificate, which the handshake checks against these
   * anchors (a client without one still connects; RFC 8705 §2).
   */
  readonly clientCaFile?: string | undefined;
}

export interface ListenerOptions {
  readonly host: string;
  readonly port: number;
  /**
   * Takes the port for this process alone (no SO_REUSEPORT): a second gateway started on a port in
   * use fails instead of silently taking half the connections (with its own config, keys or store).
   * Only the processes of one `tessera start --processes N` share a port (docs/operations.md,
   * "Several processes").
   */
  readonly exclusive: boolean;
  readonly tls?: TlsFiles | undefined;
  /** Registers the routes on an app (once per app: a TLS reload opens a new one). */
  readonly mount: (app: uWS.TemplatedApp) => void;
}

const listenExclusivePort = (uWS as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT: number }).LIBUS_LISTEN_EXCLUSIVE_PORT;

// uSockets frees a closed listening socket at the end of the event-loop iteration; the port is
// free to take again a moment later.
const relistenAttempts = 200;
const relistenPauseMs = 5;

/**
 * The listening socket, plain or TLS. uWS reads a TLS certificate once, when its app is built,
 * and has no call that swaps it: a reload builds a new app with the new files, closes the old
 * listening socket and listens again on the same port, within milliseconds (connections arriving
 * in between are refused, and clients retry). Connections already open stay on the old app, with
 * the old certificate, until they close.
 */
export class Listener {
  private readonly apps: uWS.TemplatedApp[] = [];

  private constructor(
    private readonly options: ListenerOptions,
    private socket: uWS.us_listen_socket | undefined,
    readonly port: number,
    /** The certificate and key in service, to skip a reload that would change nothing. */
    private served: TlsPair | undefined,
  ) {}

  static async open(options: ListenerOptions): Promise<Listener> {
    const pair = options.tls === undefined ? undefined : await readTlsPair(options.tls);
    const app = createApp(options.tls, pair);
    options.mount(app);
    const socket = await listenOnce(app, options.host, options.port, options.exclusive);
    if (socket === false) {
      app.close();
      throw new Error(await cannotListen(options.host, options.port, 'listen.host, listen.port'));
    }
    const listener = new Listener(options, socket, uWS.us_socket_local_port(socket as unknown as uWS.us_socket), pair);
    listener.apps.push(app);
    return listener;
  }

  get secure(): boolean {
    return this.options.tls !== undefined;
  }

  /**
   * Serves new connections with the certificate and key read again from `tls`. The files are
   * checked first: a bad pair throws and the running listener stays as it was.
   */
  async reloadTls(tls: TlsFiles): Promise<void> {
    if (this.socket === undefined) return;
    const pair = await readTlsPair(tls);
    // A reload of the config alone must not cost the moment without a listening socket.
    if (this.served !== undefined && samePair(pair, this.served)) return;
    const app = createApp(tls, pair);
    this.options.mount(app);
    uWS.us_listen_socket_close(this.socket);
    this.socket = undefined;
    for (let attempt = 0; attempt < relistenAttempts; attempt++) {
      await delay(attempt === 0 ? 0 : relistenPauseMs);
      const socket = await listenOnce(app, this.options.host, this.port, this.options.exclusive);
      if (socket !== false) {
        this.socket = socket;
        this.served = pair;
        this.apps.push(app);
        return;
      }
    }
    app.close();
    throw new Error(`could not listen on ${this.options.host}:${this.port} again after reloading the TLS files`);
  }

  /** Stops accepting connections; open ones are still served. */
  stopListening(): void {
    if (this.socket !== undefined) uWS.us_listen_socket_close(this.socket);
    this.socket = undefined;
  }

  /** Closes every connection of every app this listener opened. */
  close(): void {
    this.stopListening();
    for (const app of this.apps) app.close();
  }
}

interface TlsPair {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca?: Buffer | undefined;
}

function samePair(a: TlsPair, b: TlsPair): boolean {
  const sameCa = a.ca === undefined || b.ca === undefined ? a.ca === b.ca : a.ca.equals(b.ca);
  return sameCa && a.cert.equals(b.cert) && a.key.equals(b.key);
}

/** The certificate and key, read and known to make a working pair. */
async function readTlsPair(tls: TlsFiles): Promise<TlsPair> {
  let cert: Buffer;
  let key: Buffer;
  let ca: Buffer | undefined;
  try {
    [cert, key, ca] = await Promise.all([
      readFile(tls.certFile),
      readFile(tls.keyFile),
      tls.clientCaFile === undefined ? undefined : readFile(tls.clientCaFile),
    ]);
  } catch (err) {
    throw new Error(`tls: cannot read the certificate, key or mtls.caFile (${(err as Error).message})`);
  }
  try {
    // uWS only says "App construction failed"; Node's TLS says what is wrong with the files.
    createSecureContext({ cert, key });
  } catch (err) {
    throw new Error(`tls: ${tls.certFile} and ${tls.keyFile} are not a usable certificate and key (${(err as Error).message})`);
  }
  if (ca !== undefined) {
    try {
      createSecureContext({ cert, key, ca });
    } catch (err) {
      throw new Error(`mtls.caFile: ${tls.clientCaFile} holds no usable certificate (${(err as Error).message})`);
    }
  }
  return { cert, key, ca };
}

/** A plain app, or a TLS app on files {@link readTlsPair} checked. */
function createApp(tls: TlsFiles | undefined, pair: TlsPair | undefined): uWS.TemplatedApp {
  if (tls === undefined || pair === undefined) return uWS.App();
  // uWS reads the files itself (it takes no PEM text); they were checked a moment ago.
  // With `ca_file_name`, uSockets asks every client for a certificate (SSL_VERIFY_PEER, not
  // FAIL_IF_NO_PEER_CERT: one without still connects) and refuses one that does not chain to the
  // file's anchors; the handler reads it with `res.getX509Certificate()` (client_certificate.ts).
  return tls.clientCaFile === undefined
    ? uWS.SSLApp({ cert_file_name: tls.certFile, key_file_name: tls.keyFile })
    : uWS.SSLApp({ cert_file_name: tls.certFile, key_file_name: tls.keyFile, ca_file_name: tls.clientCaFile });
}

/** Listens once on `host:port` (exclusively: no other process may share the port); `false` when it cannot. */
export function listenOnce(app: uWS.TemplatedApp, host: string, port: number, exclusive: boolean): Promise<uWS.us_listen_socket | false> {
  return new Promise((resolve) => {
    // uWS.js has the (host, port, options, cb) form and the option's constant at run time, but
    // its types declare neither.
    const listenWithOptions = app.listen as unknown as (
      host: string,
      port: number,
      options: number,
      cb: (socket: uWS.us_listen_socket | false) => void,
    ) => uWS.TemplatedApp;
    if (exclusive) listenWithOptions.call(app, host, port, listenExclusivePort, resolve);
    else app.listen(host, port, resolve);
  });
}

/**
 * Why `host:port` cannot be taken, for the start-up error. uWS says only that it failed, so the
 * reason comes from binding the same address once more with Node's own socket (EADDRINUSE, EACCES
 * for a port below 1024, EADDRNOTAVAIL for an address this host does not have).
 */
export async function cannotListen(host: string, port: number, configFields: string): Promise<string> {
  const where = `cannot listen on ${host.includes(':') ? `[${host}]` : host}:${port} (${configFields})`;
  const code = await bindError(host, port);
  if (code === 'EADDRINUSE')
    return (
      `${where}: the port is in use by another process. A gateway takes its port to itself; only the ` +
      'processes of one "tessera start --processes N" share a port (docs/operations.md, "Several processes")'
    );
  if (code === 'EACCES') return `${where}: permission denied (a port below 1024 needs privileges)`;
  if (code === 'EADDRNOTAVAIL') return `${where}: the address is not one of this host's`;
  return code === undefined ? `${where}: the port could not be taken` : `${where}: ${code}`;
}

/** The error code of a bind to `host:port`, or `undefined` when the bind works (the port was freed since). */
function bindError(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
