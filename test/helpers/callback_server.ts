import { createServer, type IncomingMessage } from 'node:http';

/**
 * A client's redirect endpoint for the real-browser tests: a tiny HTTP server on a free 127.0.0.1
 * port. `received` resolves with the first callback; `all` lists every one.
 */
export async function startCallbackServer() {
  let receive: (url: URL) => void = () => {};
  const received = new Promise<URL>((resolve) => (receive = resolve));
  const all: URL[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const url = new URL(req.url ?? '/', `http://${req.headers.host ?? '127.0.0.1'}`);
    if (url.pathname !== '/callback') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>Callback</title><p>Signed in.</p>');
    all.push(url);
    receive(url);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    uri: `http://127.0.0.1:${address.port}/callback`,
    received,
    all,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
