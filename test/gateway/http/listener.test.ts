// The TLS listener (gateway/http/listener.ts, config `tls`; docs/operations.md "TLS"): a real TLS
// client with the test's own self-signed certificate as its only CA, openid-client over it, the
// pages' __Host- cookies, and the certificate read again on a reload without a restart.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { connect } from 'node:tls';
import * as oidc from 'openid-client';
import { startTestGateway } from '../../helpers/test_gateway.js';

const dir = t.testdir();

/** A self-signed P-256 certificate for 127.0.0.1 with `cn`, as openssl writes it. */
function makeCertificate(cn: string): { cert: string; key: string } {
  const cert = join(dir, `${cn}.crt`);
  const key = join(dir, `${cn}.key`);
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', `/CN=${cn}`].concat([
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      key,
      '-out',
      cert,
    ]),
    { stdio: 'ignore' },
  );
  return { cert, key };
}

const first = makeCertificate('first');
const second = makeCertificate('second');
const certFile = join(dir, 'tls.crt');
const keyFile = join(dir, 'tls.key');
copyFileSync(first.cert, certFile);
copyFileSync(first.key, keyFile);
const ca = [readFileSync(first.cert), readFileSync(second.cert)];

const gw = await startTestGateway(t, {
  patch: (raw) => {
    const port = (raw.listen as { port: number }).port;
    raw.issuer = `https://127.0.0.1:${port}`;
    raw.tls = { certFile, keyFile };
  },
});

/** fetch over node:https with the test CA (Node's fetch takes no CA of its own). */
function httpsFetch(
  url: string,
  init: { method?: string; headers?: Headers | Record<string, string>; body?: unknown } = {},
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const headers = Object.fromEntries(new Headers(init.headers));
    const req = httpsRequest(url, { method: init.method ?? 'GET', headers, ca, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const received = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          for (const v of Array.isArray(value) ? value : [value ?? '']) received.append(name, v);
        }
        resolve(new Response(chunks.length === 0 ? null : Buffer.concat(chunks), { status: res.statusCode ?? 0, headers: received }));
      });
    });
    req.on('error', reject);
    req.end(init.body === undefined || init.body === null ? undefined : String(init.body));
  });
}

/** The common name of the certificate a new TLS connection is served with. */
function servedCommonName(): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: gw.port, ca }, () => {
      const cn = socket.getPeerCertificate().subject.CN;
      socket.end();
      resolve(String(cn));
    });
    socket.on('error', reject);
  });
}

t.test('serves HTTPS on the configured port', async (t) => {
  t.match(gw.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  t.equal(await servedCommonName(), 'first');
  const health = await httpsFetch(`${gw.url}/healthz`);
  t.equal(health.status, 200);
  await t.rejects(fetch(`${gw.url}/healthz`), 'a client without the CA refuses the certificate');
});

t.test('openid-client discovers and gets a token over TLS with the CA', async (t) => {
  const config = await oidc.discovery(new URL(gw.config.issuer), 'm2m', undefined, oidc.ClientSecretBasic('secret'), {
    [oidc.customFetch]: (url, options) => httpsFetch(url, options),
  });
  const tokens = await oidc.clientCredentialsGrant(config, { scope: 'api1' });
  t.equal(tokens.token_type, 'bearer');
  t.equal(tokens.scope, 'api1');
});

t.test('the pages set __Host- cookies under an https issuer', async (t) => {
  const page = await httpsFetch(`${gw.url}/device`);
  t.equal(page.status, 200);
  const cookies = page.headers.getSetCookie();
  t.ok(cookies.length > 0);
  for (const cookie of cookies) {
    t.match(cookie, /^__Host-/, 'a __Host- cookie');
    t.match(cookie, /; Secure/i);
    t.match(cookie, /; Path=\//i);
    t.notMatch(cookie, /Domain=/i);
  }
});

t.test('a reload with unchanged files serves on with the same certificate', async (t) => {
  const socket = connect({ host: '127.0.0.1', port: gw.port, ca });
  await new Promise((resolve) => socket.once('secureConnect', resolve));
  t.same(await gw.reloadWith(() => {}), { applied: true, problems: [], needsRestart: [] });
  t.equal(await servedCommonName(), 'first');
  socket.end();
});

t.test('a reload reads the certificate again; a bad pair is refused and the running one stays', async (t) => {
  copyFileSync(second.cert, certFile);
  copyFileSync(second.key, keyFile);
  const reloaded = await gw.reloadWith(() => {});
  t.same(reloaded, { applied: true, problems: [], needsRestart: [] });
  t.equal(await servedCommonName(), 'second', 'new connections get the new certificate');
  t.equal((await httpsFetch(`${gw.url}/healthz`)).status, 200);

  // A key that does not match the certificate.
  copyFileSync(first.key, keyFile);
  const refused = await gw.reloadWith(() => {});
  t.equal(refused.applied, false);
  t.match(refused.problems, [{ path: 'tls', message: /not a usable certificate and key/ }]);
  t.equal(await servedCommonName(), 'second', 'the running certificate stays');

  writeFileSync(certFile, 'not a certificate');
  t.equal((await gw.reloadWith(() => {})).applied, false, 'nor a file that is not PEM');
  t.equal((await httpsFetch(`${gw.url}/healthz`)).status, 200, 'and the listener serves on');
});

t.test('switching TLS off needs a restart', async (t) => {
  copyFileSync(second.cert, certFile);
  copyFileSync(second.key, keyFile);
  const result = await gw.reloadWith((raw) => {
    delete raw.tls;
  });
  t.equal(result.applied, true);
  t.same(result.needsRestart, ['tls']);
  t.equal(await servedCommonName(), 'second', 'still TLS');
});
