// Mutual TLS (RFC 8705) on Tessera's own TLS listener: with `mtls.caFile`, uWS asks every client
// for a certificate and the handshake refuses one that does not chain to the file
// (docs/operations.md, "Mutual TLS"). openid-client, unmodified, over a fetch that presents the
// client's certificate.
import t from 'tap';
import { X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import * as oidc from 'openid-client';
import { issuedCertificate, selfSignedCertificate, type TestCertificate } from '../../helpers/client_certificates.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

const dir = t.testdir();
const server = selfSignedCertificate(dir, 'server', '/CN=127.0.0.1', 'IP:127.0.0.1');
const ca = selfSignedCertificate(dir, 'ca', '/CN=Test CA');
const rogueCa = selfSignedCertificate(dir, 'rogue-ca', '/CN=Rogue CA');
const client1 = issuedCertificate(dir, 'client1', ca, '/O=Acme/CN=client1', 'DNS:client1.example');
const other = issuedCertificate(dir, 'other', ca, '/O=Acme/CN=other');
const forged = issuedCertificate(dir, 'forged', rogueCa, '/O=Acme/CN=client1');
const self = selfSignedCertificate(dir, 'self', '/CN=device');
// uWS has no "ask, but do not verify" mode: a self-signed client certificate is listed too.
const caFile = join(dir, 'client-cas.pem');
writeFileSync(caFile, ca.pem + self.pem);

const gw = await startTestGateway(t, {
  patch: (raw) => {
    const port = (raw.listen as { port: number }).port;
    raw.issuer = `https://127.0.0.1:${port}`;
    raw.tls = { certFile: server.certFile, keyFile: server.keyFile };
    raw.mtls = { caFile };
    (raw.clients as unknown[]).push(
      {
        clientId: 'mtls-dn',
        tokenEndpointAuthMethod: 'tls_client_auth',
        tlsClientAuthSubjectDn: 'CN=client1,O=Acme',
        tlsClientCertificateBoundAccessTokens: true,
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
      },
      {
        clientId: 'mtls-self',
        tokenEndpointAuthMethod: 'self_signed_tls_client_auth',
        jwks: { keys: [new X509Certificate(self.pem).publicKey.export({ format: 'jwk' })] },
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
      },
    );
  },
});

const serverCa = readFileSync(server.certFile);

/** fetch over node:https with the server's CA and, when given, the client's certificate. */
function httpsFetch(
  url: string,
  init: { method?: string; headers?: unknown; body?: unknown } = {},
  cert?: TestCertificate,
): Promise<Response> {
  return new Promise((resolve, reject) => {
    const headers = Object.fromEntries(new Headers(init.headers as ConstructorParameters<typeof Headers>[0]));
    const tls = cert === undefined ? {} : { cert: readFileSync(cert.certFile), key: readFileSync(cert.keyFile) };
    const req = httpsRequest(url, { method: init.method ?? 'GET', headers, ca: serverCa, agent: false, ...tls }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const received = new Headers();
        for (const [name, value] of Object.entries(res.headers)) for (const v of [value ?? ''].flat()) received.append(name, v);
        resolve(new Response(chunks.length === 0 ? null : Buffer.concat(chunks), { status: res.statusCode ?? 0, headers: received }));
      });
    });
    req.on('error', reject);
    req.end(init.body === undefined || init.body === null ? undefined : String(init.body));
  });
}

const token = async (clientId: string, cert?: TestCertificate) => {
  const res = await httpsFetch(
    `${gw.url}/connect/token`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=client_credentials&client_id=${clientId}`,
    },
    cert,
  );
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
const payloadOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1] as string, 'base64url').toString()) as Record<string, unknown>;

t.test('the handshake takes a certificate from the CA file; tls_client_auth checks the subject', async (t) => {
  const issued = await token('mtls-dn', client1);
  t.equal(issued.status, 200);
  t.same(payloadOf(issued.body.access_token as string).cnf, { 'x5t#S256': client1.thumbprint });
  t.equal((await token('mtls-dn', other)).status, 401, 'another subject from the same CA');
  t.equal((await token('mtls-dn')).status, 401, 'a client without a certificate connects, and is not authenticated');
});

t.test('the handshake refuses a certificate from another CA', async (t) => {
  await t.rejects(token('mtls-dn', forged), /unknown ca|alert/i);
});

t.test('self_signed_tls_client_auth with the certificate listed in the CA file', async (t) => {
  t.equal((await token('mtls-self', self)).status, 200);
  t.equal((await token('mtls-self', client1)).status, 401, 'a certificate of another key');
});

t.test('openid-client, unmodified, with TlsClientAuth over a fetch that presents the certificate', async (t) => {
  const config = await oidc.discovery(new URL(gw.config.issuer), 'mtls-dn', undefined, oidc.TlsClientAuth(), {
    [oidc.customFetch]: (url, options) => httpsFetch(url, options, client1),
  });
  const tokens = await oidc.clientCredentialsGrant(config, { scope: 'api1' });
  t.equal(tokens.token_type, 'bearer');
  t.same(payloadOf(tokens.access_token).cnf, { 'x5t#S256': client1.thumbprint });
  const introspected = await httpsFetch(
    `${gw.url}/connect/introspect`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `client_id=mtls-dn&token=${tokens.access_token}`,
    },
    client1,
  );
  t.same(((await introspected.json()) as { cnf?: unknown }).cnf, { 'x5t#S256': client1.thumbprint }, 'introspection shows the binding');
});
