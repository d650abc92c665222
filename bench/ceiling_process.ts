/**
 * The front end's upper bound on this machine: a uWebSockets.js POST endpoint that does what
 * Tessera's token endpoint does before it hands a request to a worker (copy the headers, read the
 * body, parse the form) and answers a fixed token-sized JSON with the same headers. No auth, no
 * signing, no worker hop.
 *
 *   node --import tsx bench/ceiling_process.ts [port]
 */
import * as uWS from 'uWebSockets.js';
import { announceReady, stopOnRequest } from './support/child_protocol.js';

// The size of a real ES256 client_credentials response from Tessera (about 560 bytes).
const fakeToken = `eyJhbGciOiJFUzI1NiIsInR5cCI6ImF0K2p3dCIsImtpZCI6ImJlbmNoIn0.${'x'.repeat(340)}.${'s'.repeat(86)}`;
const body = JSON.stringify({ access_token: fakeToken, token_type: 'Bearer', expires_in: 3600, scope: 'api1' });
const badRequest = '{"error":"invalid_request"}';

const port = Number(process.argv[2] ?? 0);
const app = uWS.App();

app.post('/connect/token', (res, req) => {
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  // Headers die with this callback: copy them now, as the gateway does.
  const authorization = req.getHeader('authorization');
  const contentType = req.getHeader('content-type');
  const chunks: Buffer[] = [];
  res.onData((chunk, isLast) => {
    chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (!isLast || aborted) return;
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    const ok = form.get('grant_type') === 'client_credentials' && authorization.length > 0 && contentType.length > 0;
    res.cork(() => {
      res.writeStatus(ok ? '200 OK' : '400 Bad Request');
      res.writeHeader('Content-Type', 'application/json; charset=utf-8');
      res.writeHeader('Cache-Control', 'no-store');
      res.writeHeader('Pragma', 'no-cache');
      res.end(ok ? body : badRequest);
    });
  });
});
app.any('/*', (res) => {
  res.writeStatus('404 Not Found').end();
});

const listenSocket = await new Promise<uWS.us_listen_socket>((resolve, reject) => {
  app.listen('127.0.0.1', port, (socket) => (socket === false ? reject(new Error(`cannot listen on ${port}`)) : resolve(socket)));
});
const actualPort = uWS.us_socket_local_port(listenSocket as unknown as uWS.us_socket);

stopOnRequest(async () => {
  uWS.us_listen_socket_close(listenSocket);
  app.close();
});
announceReady(`http://127.0.0.1:${actualPort}`, { responseBytes: body.length });
