// The shipped nginx front (deploy/nginx/tessera.conf; docs/operations.md, "Behind a proxy") run
// as it ships, its `# site:` lines replaced by this test's ports and certificate, in front of a
// real gateway: everything uWebSockets.js decides badly on its own (docs/operations.md, "HTTP
// framing") is checked over raw TLS connections to nginx, and the client address reaches
// throttles, logs and events. One nginx and one gateway for every subtest. Skipped, with the
// reason, where nginx or openssl is missing; CI installs both (.ci/run).
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect } from 'node:net';
import path from 'node:path';
import { Writable } from 'node:stream';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { pino } from 'pino';
import type { AuditEvent } from '../../gateway/observability/events/audit_event.js';
import { maxBodyBytes } from '../../gateway/http/body_reader.js';
import { basicAuthorization } from '../helpers/basic_authorization.js';
import { freePort } from '../helpers/free_port.js';
import { renderSite, shippedSitePath, skipWithoutNginx, startNginx } from '../helpers/nginx_front.js';
import { rawConversation, rawConversationOver } from '../helpers/raw_http.js';
import { startTestGateway } from '../helpers/test_gateway.js';

const skipWithoutOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return false;
  } catch {
    return "no openssl binary: install Debian's openssl to run the reverse-proxy test (it makes the test's certificates)";
  }
})();

const form = 'application/x-www-form-urlencoded';
const m2m = basicAuthorization('m2m', 'secret');
const tokenPost = (http: string, headers: string) =>
  `POST /connect/token ${http}\r\nHost: x\r\n${headers}Content-Type: ${form}\r\nContent-Length: 29\r\n\r\ngrant_type=client_credentials`;

t.test('nginx in front of Tessera', { skip: skipWithoutNginx || skipWithoutOpenssl }, async (t) => {
  const dir = t.testdir();
  const file = (name: string) => path.join(dir, name);
  // A server certificate for 127.0.0.1 that the clients below verify, and a client certificate.
  const certificate = (name: string, subject: string, extra: string[] = []) =>
    execFileSync(
      'openssl',
      [
        ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1'],
        ...['-keyout', file(`${name}.key`), '-out', file(`${name}.crt`), '-subj', subject, ...extra],
      ],
      { stdio: 'ignore' },
    );
  certificate('server', '/CN=127.0.0.1', ['-addext', 'subjectAltName=IP:127.0.0.1']);
  certificate('client', '/CN=tessera-test-client');
  const ca = readFileSync(file('server.crt'));

  type LogLine = Record<string, unknown> & { msg: string };
  const logs: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.length > 0) logs.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const events: AuditEvent[] = [];
  const maxFailures = 3;
  const gw = await startTestGateway(t, {
    logger: pino({ level: 'info' }, sink),
    onEvent: (event) => {
      events.push(event);
    },
    patch: (raw) => {
      // nginx connects from 127.0.0.1; the clients below connect to it from 127.0.0.2 and up.
      raw.trustedProxies = ['127.0.0.1/32'];
      raw.throttling = { clientAuthentication: { maxFailures, windowSeconds: 60 } };
      // RFC 8705 §2.2 through the front: the client certificate's key is this client's.
      const clientKey = new X509Certificate(readFileSync(file('client.crt'))).publicKey.export({ format: 'jwk' });
      (raw.clients as unknown[]).push({
        clientId: 'mtls-self',
        tokenEndpointAuthMethod: 'self_signed_tls_client_auth',
        jwks: { keys: [clientKey] },
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
        tlsClientCertificateBoundAccessTokens: true,
      });
    },
  });

  const port = await freePort();
  const defaultPort = await freePort();
  const site = renderSite(readFileSync(shippedSitePath, 'utf8'), {
    upstream: `server 127.0.0.1:${gw.port};`,
    listen: `listen 127.0.0.1:${port} ssl;`,
    server_name: 'server_name 127.0.0.1;',
    ssl_certificate: `ssl_certificate ${file('server.crt')};`,
    ssl_certificate_key: `ssl_certificate_key ${file('server.key')};`,
  });
  // Beside the shipped file, not in it: nginx as it comes, `proxy_pass` alone, for the 505.
  const defaultFront = `server {\n  listen 127.0.0.1:${defaultPort};\n  location / { proxy_pass http://127.0.0.1:${gw.port}; }\n}\n`;
  const nginx = await startNginx(t, { dir, site: `${site}\n${defaultFront}`, port });

  /** A TLS connection to the front from `from` (a loopback address), once its handshake is done. */
  const dial = (from = '127.0.0.2') =>
    new Promise<TLSSocket>((resolve, reject) => {
      // TLS over a TCP socket of our own: tls.connect's options have no source address.
      const tcp = netConnect({ host: '127.0.0.1', port, localAddress: from });
      tcp.setNoDelay(true);
      const socket = tlsConnect({ socket: tcp, host: '127.0.0.1', ca });
      socket.once('secureConnect', () => resolve(socket));
      socket.once('error', reject);
    });
  const converse = (bytes: string | string[], options: { from?: string; waitMs?: number; pauseMs?: number } = {}) =>
    rawConversationOver(() => dial(options.from), typeof bytes === 'string' ? [bytes] : bytes, options);

  interface Answer {
    status: number;
    headers: Record<string, string | string[] | undefined>;
    body: string;
  }
  /** An ordinary HTTPS client's request to the front. */
  const https = (
    pathname: string,
    options: { from?: string; headers?: Record<string, string>; body?: string; clientCertificate?: boolean } = {},
  ) =>
    new Promise<Answer>((resolve, reject) => {
      const req = httpsRequest(
        {
          host: '127.0.0.1',
          port,
          ca,
          path: pathname,
          method: options.body === undefined ? 'GET' : 'POST',
          headers: options.headers,
          localAddress: options.from ?? '127.0.0.2',
          agent: false,
          ...(options.clientCertificate ? { cert: readFileSync(file('client.crt')), key: readFileSync(file('client.key')) } : {}),
        },
        (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => (body += chunk.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        },
      );
      req.on('error', reject);
      req.end(options.body);
    });
  const tokenRequest = (clientId: string, secret: string, options: { from?: string; forwardedFor?: string } = {}) =>
    https('/connect/token', {
      from: options.from,
      headers: {
        authorization: basicAuthorization(clientId, secret),
        'content-type': form,
        ...(options.forwardedFor === undefined ? {} : { 'x-forwarded-for': options.forwardedFor }),
      },
      body: 'grant_type=client_credentials',
    });

  /** The audit events (and `client authentication failed` log lines) of `clientId`, once `count` arrived. */
  async function failuresOf(clientId: string, count: number): Promise<{ events: AuditEvent[]; logs: LogLine[] }> {
    const deadline = Date.now() + 5_000;
    const mine = () => events.filter((e) => e.name === 'ClientAuthenticationFailure' && e.clientId === clientId);
    while (mine().length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    return { events: mine(), logs: logs.filter((l) => l.msg === 'client authentication failed' && l.clientId === clientId) };
  }

  t.test('a default nginx speaks HTTP/1.0 upstream and gets 505 from uWS; the shipped file does not', async (t) => {
    const get = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';
    const plain = await rawConversation(defaultPort, get);
    t.same(plain.statuses, [505], 'proxy_pass alone: 505 HTTP Version Not Supported');
    t.same((await converse(get)).statuses, [200], 'through the shipped file');
  });

  t.test('HTTPS through the front, with and without a client certificate', async (t) => {
    const health = await https('/healthz');
    t.equal(health.status, 200);
    t.same(JSON.parse(health.body), { status: 'ok' });
    t.equal(health.headers.uwebsockets, undefined, 'no uWebSockets header');
    t.equal(health.headers.server, 'nginx', 'no version in Server either');
    const issued = await https('/connect/token', {
      clientCertificate: true,
      headers: { authorization: m2m, 'content-type': form },
      body: 'grant_type=client_credentials',
    });
    t.equal(issued.status, 200, 'a token request with a client certificate');
    t.type((JSON.parse(issued.body) as { access_token?: unknown }).access_token, 'string');

    // The gateway's 4 KiB header limit shows what reaches it: a section just under it with the
    // certificate added goes over.
    const filler = { 'x-filler': 'a'.repeat(3_700) };
    t.equal((await https('/healthz', { headers: filler })).status, 200, 'without a certificate: under 4 KiB');
    const withCertificate = await https('/healthz', { headers: filler, clientCertificate: true });
    t.equal(withCertificate.status, 431, 'with one: the escaped PEM is forwarded (UWS_HTTP_MAX_HEADERS_SIZE raises the limit)');
    const forged = await converse(
      `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Client-Cert: ${'a'.repeat(2_500)}\r\nX-Client-Cert: ${'b'.repeat(2_500)}\r\nConnection: close\r\n\r\n`,
    );
    t.same(forged.statuses, [200], "a client's own X-Client-Cert fields (5 KiB of them) are not passed on");
  });

  t.test('mutual TLS through the front: the forwarded certificate authenticates and binds (RFC 8705)', async (t) => {
    const request = (clientCertificate: boolean) =>
      https('/connect/token', {
        clientCertificate,
        headers: { 'content-type': form },
        body: 'grant_type=client_credentials&client_id=mtls-self',
      });
    const issued = await request(true);
    t.equal(issued.status, 200);
    const accessToken = (JSON.parse(issued.body) as { access_token: string }).access_token;
    const cnf = JSON.parse(Buffer.from(accessToken.split('.')[1] as string, 'base64url').toString()).cnf;
    const der = new X509Certificate(readFileSync(file('client.crt'))).raw;
    t.same(cnf, { 'x5t#S256': createHash('sha256').update(der).digest('base64url') }, 'bound to the certificate nginx saw');
    const without = await request(false);
    t.equal(without.status, 401, 'no certificate, no authentication');
    const forged = await converse(
      `POST /connect/token HTTP/1.1\r\nHost: x\r\nX-Client-Cert: ${encodeURIComponent(readFileSync(file('client.crt'), 'utf8'))}\r\n` +
        `Content-Type: ${form}\r\nContent-Length: 49\r\nConnection: close\r\n\r\ngrant_type=client_credentials&client_id=mtls-self`,
    );
    t.same(forged.statuses, [401], "a client's own X-Client-Cert with the right certificate, but no TLS proof of its key, is dropped");
  });

  t.test('HTTP/1.0 clients are answered', async (t) => {
    const get = await converse('GET /healthz HTTP/1.0\r\n\r\n');
    t.same(get.statuses, [200], 'a GET without Host');
    t.match(get.text, /\{"status":"ok"\}$/);
    const post = await converse(tokenPost('HTTP/1.0', `Authorization: ${m2m}\r\n`));
    t.same(post.statuses, [200], 'a token request');
    t.match(post.text, /"access_token":"/);
  });

  t.test('pipelined requests are answered in order, a POST behind a pending POST included', async (t) => {
    const token = (scope: string) =>
      `POST /connect/token HTTP/1.1\r\nHost: x\r\nAuthorization: ${m2m}\r\nContent-Type: ${form}\r\n` +
      `Content-Length: ${29 + 7 + scope.length}\r\n\r\ngrant_type=client_credentials&scope=${scope}`;
    const r = await converse(`${token('api1')}${token('api2')}GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, {
      waitMs: 10_000,
    });
    t.same(r.statuses, [200, 200, 200], 'all three answered');
    const first = r.text.indexOf('"scope":"api1"');
    const second = r.text.indexOf('"scope":"api2"');
    t.ok(first !== -1 && second > first && r.text.indexOf('{"status":"ok"}') > second, 'in the order they were sent');
  });

  t.test('a request line split at any byte is answered', async (t) => {
    // Sent to uWS directly, a split inside `HTTP/1.1` gets 505 (docs/operations.md, "HTTP framing").
    const request = tokenPost('HTTP/1.1', 'Connection: close\r\n');
    const lineEnd = request.indexOf('\r\n') + 2;
    const failed: string[] = [];
    const at = Array.from({ length: lineEnd }, (_, i) => i + 1);
    for (let i = 0; i < at.length; i += 6) {
      await Promise.all(
        at.slice(i, i + 6).map(async (split) => {
          const r = await converse([request.slice(0, split), request.slice(split)], { pauseMs: 25, waitMs: 5_000 });
          if (r.statuses.join() !== '401') failed.push(`${split}: ${r.text.split('\r\n')[0]}`);
        }),
      );
    }
    t.same(failed, [], `every one of ${at.length} splits answered 401 (no client authentication)`);
  });

  t.test('a missing Host and malformed header sections are refused at once', async (t) => {
    // uWS on its own waits 10 s for the first and closes unanswered after the others.
    for (const [what, bytes] of [
      ['no header field at all', 'GET /healthz HTTP/1.1\r\n\r\n'],
      ['no Host among other fields', 'GET /healthz HTTP/1.1\r\nAccept: */*\r\n\r\n'],
      ['an obs-fold continuation line', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\n\r\n'],
      ['a space before the colon', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A : b\r\n\r\n'],
      ['a NUL in a field value', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: b\0c\r\n\r\n'],
    ] as const) {
      const started = Date.now();
      const r = await converse(bytes, { waitMs: 5_000 });
      t.same(r.statuses, [400], what);
      t.ok(r.closed && Date.now() - started < 5_000, `${what}: closed at once`);
    }
  });

  t.test('every smuggling vector is refused, and the request behind it never runs', async (t) => {
    // test/gateway/http/framing.test.ts's vectors, each followed in the same write by a token
    // request of a client id of its own: a wrong secret, so every run of it is an audit event.
    let n = 0;
    const smuggled: { marker: string; answered: number }[] = [];
    const behind = () => {
      const marker = `smuggled-${++n}`;
      const bytes =
        `POST /connect/token HTTP/1.1\r\nHost: x\r\nAuthorization: ${basicAuthorization(marker, 'wrong')}\r\n` +
        `Content-Type: ${form}\r\nContent-Length: 29\r\nConnection: close\r\n\r\ngrant_type=client_credentials`;
      return { marker, bytes };
    };
    const post = (framing: string, body: string) =>
      `POST /connect/token HTTP/1.1\r\nHost: x\r\nContent-Type: ${form}\r\n${framing}\r\n${body}`;
    const refused: [string, (next: string) => string][] = [
      ['two different Content-Length values', (next) => post(`Content-Length: 0\r\nContent-Length: ${3 + next.length}\r\n`, `a=b${next}`)],
      [
        'the same on a GET',
        (next) => `GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: ${next.length}\r\n\r\n${next}`,
      ],
      ['an empty Content-Length', (next) => post('Content-Length:\r\n', `a=b${next}`)],
      ['an empty Content-Length before a real one', (next) => post('Content-Length: \r\nContent-Length: 3\r\n', `a=b${next}`)],
      // Tessera reads these as one body; nginx refuses any repeated Content-Length.
      ['a repeated identical Content-Length', (next) => post('Content-Length: 3\r\nContent-Length: 3\r\n', `a=b${next}`)],
      ...['xchunked', 'chunkedx', 'chunked, gzip', 'gzip, chunked', 'identity'].map((coding): [string, (next: string) => string] => [
        `Transfer-Encoding: ${coding}`,
        (next) => post(`Transfer-Encoding: ${coding}\r\n`, `0\r\n\r\n${next}`),
      ]),
      ['two Transfer-Encoding headers', (next) => post('Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n', `0\r\n\r\n${next}`)],
      ['Transfer-Encoding with Content-Length', (next) => post('Transfer-Encoding: chunked\r\nContent-Length: 5\r\n', `0\r\n\r\n${next}`)],
      ['a Content-Length that is not digits', (next) => post('Content-Length: +3\r\n', `a=b${next}`)],
      ['a bad chunk size', (next) => post('Transfer-Encoding: chunked\r\n', `zz\r\na=b\r\n0\r\n\r\n${next}`)],
    ];
    for (const [what, vector] of refused) {
      const { marker, bytes } = behind();
      const r = await converse(vector(bytes));
      t.equal(r.statuses.length, 1, `${what}: one answer`);
      t.ok((r.statuses[0] ?? 0) >= 400 && r.closed, `${what}: refused (${r.statuses[0]}), the connection closed`);
      smuggled.push({ marker, answered: 0 });
    }
    // Unambiguous framings nginx reads and sends on with a Content-Length of its own: the next
    // request is a request of its own, answered once (uWS on its own answers the trailer 505).
    for (const [what, vector] of [
      ['a chunked body', (next: string) => post('Transfer-Encoding: chunked\r\n', `3\r\na=b\r\n0\r\n\r\n${next}`)],
      ['a Chunked body', (next: string) => post('Transfer-Encoding: Chunked\r\n', `3\r\na=b\r\n0\r\n\r\n${next}`)],
      [
        'a chunked body with a trailer section',
        (next: string) => post('Transfer-Encoding: chunked\r\n', `3\r\na=b\r\n0\r\nX-Trailer: y\r\n\r\n${next}`),
      ],
    ] as const) {
      const { marker, bytes } = behind();
      const r = await converse(vector(bytes), { waitMs: 5_000 });
      t.same(r.statuses, [401, 401], `${what}: the token request, then the next request`);
      smuggled.push({ marker, answered: 1 });
    }
    // The answered ones have run: wait for their events, then a little more for any other run.
    for (const { marker, answered } of smuggled) if (answered > 0) await failuresOf(marker, answered);
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const { marker, answered } of smuggled) {
      t.equal((await failuresOf(marker, 0)).events.length, answered, `${marker} ran ${answered === 0 ? 'never' : 'once'}`);
    }
  });

  t.test("Tessera's limits hold at the front", async (t) => {
    const body = (bytes: number) => `grant_type=client_credentials&pad=${'a'.repeat(bytes - 34)}`;
    const post = (content: string) =>
      `POST /connect/token HTTP/1.1\r\nHost: x\r\nContent-Type: ${form}\r\nContent-Length: ${content.length}\r\nConnection: close\r\n\r\n${content}`;
    t.same((await converse(post(body(maxBodyBytes)))).statuses, [401], `a body of ${maxBodyBytes} bytes reaches the gateway`);
    const over = await converse(post(body(maxBodyBytes + 1)));
    t.same(over.statuses, [413], 'one byte more is refused by nginx');
    const get = (headers: string) => `GET /healthz HTTP/1.1\r\nHost: x\r\n${headers}Connection: close\r\n\r\n`;
    t.same(
      (await converse(get(`X-Filler: ${'a'.repeat(3_900)}\r\n`))).statuses,
      [200],
      'a header section under 4 KiB, with what nginx adds',
    );
    const long = await converse(get(`X-Filler: ${'a'.repeat(4_200)}\r\n`));
    t.same(long.statuses, [400], 'a field over 4 KiB is refused by nginx');
    const fields = Array.from({ length: 120 }, (_, i) => `X-F${i}: v\r\n`).join('');
    t.same((await converse(get(fields))).statuses, [431], "120 fields: the gateway's 431, passed on");
  });

  t.test('trustedProxies: the real client address in logs, events and throttles; a forged X-Forwarded-For is not believed', async (t) => {
    const probe = await tokenRequest('address-probe', 'wrong', { from: '127.0.0.2', forwardedFor: '203.0.113.9' });
    t.equal(probe.status, 401);
    const seen = await failuresOf('address-probe', 1);
    t.equal(seen.events[0]?.remoteAddress, '127.0.0.2', 'the event');
    t.equal(seen.logs[0]?.address, '127.0.0.2', 'the security log line');
    const line = logs.find((l) => l.msg === 'token request' && l.clientId === 'address-probe');
    t.equal(line?.address, '127.0.0.2', 'the token request log line');

    t.test('a client on a trusted address cannot pass a forged one through nginx', async (t) => {
      // nginx overwrites X-Forwarded-For: appending would hand Tessera `203.0.113.77, 127.0.0.1`,
      // and with 127.0.0.1 trusted, the right-most untrusted hop would be the forged one.
      t.equal((await tokenRequest('trusted-host', 'wrong', { from: '127.0.0.1', forwardedFor: '203.0.113.77' })).status, 401);
      t.equal((await failuresOf('trusted-host', 1)).events[0]?.remoteAddress, '127.0.0.1');
    });

    t.test('the throttle counts the real client, whatever it claims', async (t) => {
      for (let i = 1; i <= maxFailures; i++) {
        const r = await tokenRequest('throttled', 'wrong', { from: '127.0.0.3', forwardedFor: `198.51.100.${i}` });
        t.equal(r.status, 401, `failure ${i}, "from" 198.51.100.${i}`);
      }
      const blocked = await tokenRequest('throttled', 'wrong', { from: '127.0.0.3', forwardedFor: '198.51.100.200' });
      t.equal(blocked.status, 429, 'the client is blocked, whatever address it claims next');
      const neighbour = await tokenRequest('throttled', 'wrong', { from: '127.0.0.4' });
      t.equal(neighbour.status, 401, 'another client behind the same nginx is not');
    });
  });

  t.test('nginx logged no error about the upstream', async (t) => {
    const upstreamErrors = nginx
      .errorLog()
      .split('\n')
      .filter((line) => /\[(error|crit|alert|emerg)\].*upstream/.test(line));
    t.same(upstreamErrors, [], 'no upstream connection refused, reset or closed early');
  });
});
