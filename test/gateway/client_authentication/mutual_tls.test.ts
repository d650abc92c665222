// Mutual TLS client authentication and certificate-bound tokens (RFC 8705) behind a
// TLS-terminating proxy: the proxy forwards the client's certificate in `X-Client-Cert` (URL-encoded
// PEM, nginx `$ssl_client_escaped_cert`), taken only from `trustedProxies` (here 127.0.0.1; the
// test's "untrusted" peer connects from 127.0.0.2). docs/endpoints.md, "Mutual TLS".
import t from 'tap';
import { X509Certificate } from 'node:crypto';
import { request } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as oidc from 'openid-client';
import { issuedCertificate, selfSignedCertificate, type TestCertificate } from '../../helpers/client_certificates.js';
import { hashPassword } from '../../../core/crypto/password_hash.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

const dir = t.testdir();
const ca = selfSignedCertificate(dir, 'ca', '/CN=Test CA');
const rogueCa = selfSignedCertificate(dir, 'rogue-ca', '/CN=Rogue CA');
const san = 'DNS:client1.example,URI:https://client1.example/app,IP:10.1.2.3,email:client1@example.com';
const client1 = issuedCertificate(dir, 'client1', ca, '/O=Acme/CN=client1', san);
const other = issuedCertificate(dir, 'other', ca, '/O=Acme/CN=other', 'DNS:other.example');
const forged = issuedCertificate(dir, 'forged', rogueCa, '/O=Acme/CN=client1', san);
const self = selfSignedCertificate(dir, 'self', '/CN=self-signed client');
const stranger = selfSignedCertificate(dir, 'stranger', '/CN=self-signed client');
const caFile = join(dir, 'trusted-cas.pem');
writeFileSync(caFile, ca.pem);

const jwkOf = (cert: TestCertificate) => new X509Certificate(cert.pem).publicKey.export({ format: 'jwk' });
const mtlsClient = (clientId: string, fields: Record<string, unknown>) => ({
  clientId,
  tokenEndpointAuthMethod: 'tls_client_auth',
  allowedGrantTypes: ['client_credentials'],
  allowedScopes: ['api1'],
  ...fields,
});

const alicePassword = await hashPassword('alice-pw');
const gw = await startTestGateway(t, {
  patch: (raw) => {
    raw.trustedProxies = ['127.0.0.1'];
    raw.mtls = { caFile };
    raw.users = [{ subjectId: 'sub-alice', username: 'alice', passwordHash: alicePassword }];
    (raw.clients as unknown[]).push(
      mtlsClient('mtls-dn', { tlsClientAuthSubjectDn: 'CN=client1,O=Acme', tlsClientCertificateBoundAccessTokens: true }),
      mtlsClient('mtls-dns', { tlsClientAuthSanDns: 'CLIENT1.example' }),
      mtlsClient('mtls-uri', { tlsClientAuthSanUri: 'https://client1.example/app' }),
      mtlsClient('mtls-ip', { tlsClientAuthSanIp: '10.1.2.3' }),
      mtlsClient('mtls-email', { tlsClientAuthSanEmail: 'client1@example.com' }),
      {
        clientId: 'mtls-self',
        tokenEndpointAuthMethod: 'self_signed_tls_client_auth',
        jwks: { keys: [jwkOf(self)] },
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
        tlsClientCertificateBoundAccessTokens: true,
      },
      {
        clientId: 'bound-public',
        requireClientSecret: false,
        allowedGrantTypes: ['password', 'refresh_token'],
        allowedScopes: ['openid', 'offline_access'],
        allowOfflineAccess: true,
        tlsClientCertificateBoundAccessTokens: true,
      },
      {
        clientId: 'introspector',
        tokenEndpointAuthMethod: 'tls_client_auth',
        tlsClientAuthSubjectDn: 'CN=other,O=Acme',
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
      },
    );
  },
});

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** A request as the proxy (127.0.0.1) or a stranger (127.0.0.2) sends it, with `cert` in the header. */
function send(
  path: string,
  options: { form?: Record<string, string>; cert?: TestCertificate; from?: string; authorization?: string },
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.cert !== undefined) headers['x-client-cert'] = encodeURIComponent(options.cert.pem);
  if (options.authorization !== undefined) headers.authorization = options.authorization;
  const body = options.form === undefined ? undefined : new URLSearchParams(options.form).toString();
  if (body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
  return new Promise((resolve, reject) => {
    const req = request(
      `${gw.url}${path}`,
      { method: body === undefined ? 'GET' : 'POST', headers, localAddress: options.from ?? '127.0.0.1', agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString() || '{}') }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const token = (clientId: string, cert?: TestCertificate, from?: string, extra: Record<string, string> = {}) =>
  send('/connect/token', { form: { grant_type: 'client_credentials', client_id: clientId, ...extra }, cert, from });
const payloadOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1] as string, 'base64url').toString()) as Record<string, unknown>;
const invalidClient = { error: 'invalid_client', error_description: 'Client authentication failed.' };

t.test('tls_client_auth: the subject DN, or one subjectAltName of each kind, names the client', async (t) => {
  for (const clientId of ['mtls-dn', 'mtls-dns', 'mtls-uri', 'mtls-ip', 'mtls-email']) {
    const answer = await token(clientId, client1);
    t.equal(answer.status, 200, clientId);
  }
});

t.test('tls_client_auth refuses a certificate naming another subject, from an untrusted CA, or none', async (t) => {
  for (const clientId of ['mtls-dn', 'mtls-dns', 'mtls-uri', 'mtls-ip', 'mtls-email']) {
    t.same(await token(clientId, other), { status: 401, body: invalidClient }, `${clientId}: another subject`);
  }
  t.same(await token('mtls-dn', forged), { status: 401, body: invalidClient }, 'the right DN from an untrusted CA');
  t.same(await token('mtls-dn'), { status: 401, body: invalidClient }, 'no certificate');
  t.same(await token('mtls-dn', client1, undefined, { client_secret: 'x' }), { status: 401, body: invalidClient }, 'nor a secret instead');
});

t.test('the certificate header counts only from a trusted proxy', async (t) => {
  t.same(await token('mtls-dn', client1, '127.0.0.2'), { status: 401, body: invalidClient });
  t.same(await token('mtls-self', self, '127.0.0.2'), { status: 401, body: invalidClient });
});

t.test('self_signed_tls_client_auth: a certificate whose key is in the client jwks', async (t) => {
  t.equal((await token('mtls-self', self)).status, 200);
  t.same(await token('mtls-self', stranger), { status: 401, body: invalidClient }, 'same subject, another key');
  t.same(await token('mtls-self', client1), { status: 401, body: invalidClient }, 'a CA-issued certificate of another key');
});

t.test('a bound client gets cnf.x5t#S256 of its certificate; introspection shows it', async (t) => {
  const answer = await token('mtls-self', self);
  t.equal(answer.body.token_type, 'Bearer', 'RFC 8705 tokens stay Bearer');
  const accessToken = answer.body.access_token as string;
  t.same(payloadOf(accessToken).cnf, { 'x5t#S256': self.thumbprint });
  const unbound = await token('mtls-dns', client1);
  t.notOk(payloadOf(unbound.body.access_token as string).cnf, 'a client without binding gets none');

  const introspected = await send('/connect/introspect', { form: { token: accessToken, client_id: 'mtls-self' }, cert: self });
  t.equal(introspected.status, 200);
  t.same(introspected.body.cnf, { 'x5t#S256': self.thumbprint });
  t.equal(introspected.body.active, true);
  const byOther = await send('/connect/introspect', { form: { token: accessToken, client_id: 'introspector' }, cert: self });
  t.same(byOther, { status: 401, body: invalidClient }, 'introspection authenticates with the certificate too');
});

t.test('a bound client without a certificate is refused before any token is issued', async (t) => {
  const answer = await send('/connect/token', {
    form: { grant_type: 'password', client_id: 'bound-public', username: 'alice', password: 'alice-pw', scope: 'openid' },
  });
  t.same(answer, {
    status: 400,
    body: { error: 'invalid_request', error_description: 'A TLS client certificate is required for this client.' },
  });
});

t.test("a public client's refresh token and UserInfo need the certificate the tokens are bound to", async (t) => {
  const form = {
    grant_type: 'password',
    client_id: 'bound-public',
    username: 'alice',
    password: 'alice-pw',
    scope: 'openid offline_access',
  };
  const issued = await send('/connect/token', { form, cert: self });
  t.equal(issued.status, 200);
  const accessToken = issued.body.access_token as string;
  t.same(payloadOf(accessToken).cnf, { 'x5t#S256': self.thumbprint });

  const userinfo = (cert?: TestCertificate, from?: string) =>
    send('/connect/userinfo', { authorization: `Bearer ${accessToken}`, cert, from });
  t.same(await userinfo(self), { status: 200, body: { sub: 'sub-alice' } });
  const refused = {
    status: 401,
    body: { error: 'invalid_token', error_description: 'The access token is bound to another TLS client certificate.' },
  };
  t.same(await userinfo(stranger), refused, 'another certificate');
  t.same(await userinfo(), refused, 'no certificate');
  t.same(await userinfo(self, '127.0.0.2'), refused, 'the right certificate from an untrusted peer');

  const refresh = (cert: TestCertificate) =>
    send('/connect/token', {
      form: { grant_type: 'refresh_token', client_id: 'bound-public', refresh_token: issued.body.refresh_token as string },
      cert,
    });
  t.same(await refresh(stranger), {
    status: 400,
    body: { error: 'invalid_grant', error_description: 'The refresh token is bound to another client certificate.' },
  });
  const refreshed = await refresh(self);
  t.equal(refreshed.status, 200, 'the token was left usable by the refused attempt');
  t.same(payloadOf(refreshed.body.access_token as string).cnf, { 'x5t#S256': self.thumbprint });
});

t.test("a public client's certificate-bound refresh token is revoked only with its certificate (RFC 8705 §4)", async (t) => {
  const form = { grant_type: 'password', client_id: 'bound-public', username: 'alice', password: 'alice-pw', scope: 'offline_access' };
  const issued = await send('/connect/token', { form, cert: self });
  t.equal(issued.status, 200);
  const refreshToken = issued.body.refresh_token as string;
  const revoke = (cert?: TestCertificate, from?: string) =>
    send('/connect/revocation', { form: { client_id: 'bound-public', token: refreshToken, token_type_hint: 'refresh_token' }, cert, from });
  const refused = {
    status: 400,
    body: { error: 'invalid_request', error_description: 'Revoking this refresh token requires the client certificate it is bound to.' },
  };
  t.same(await revoke(), refused, 'no certificate');
  t.same(await revoke(stranger), refused, 'another certificate');
  t.same(await revoke(self, '127.0.0.2'), refused, 'the right certificate from an untrusted peer');
  const refresh = () =>
    send('/connect/token', { form: { grant_type: 'refresh_token', client_id: 'bound-public', refresh_token: refreshToken }, cert: self });
  const refreshed = await refresh();
  t.equal(refreshed.status, 200, 'the refused revocations left the family alive');

  const next = refreshed.body.refresh_token as string;
  const revoked = await send('/connect/revocation', { form: { client_id: 'bound-public', token: next }, cert: self });
  t.same(revoked, { status: 200, body: {} }, 'with its certificate');
  const after = await send('/connect/token', {
    form: { grant_type: 'refresh_token', client_id: 'bound-public', refresh_token: next },
    cert: self,
  });
  t.equal(after.status, 400, 'the family is revoked');
});

t.test('discovery states the methods and certificate-bound tokens', async (t) => {
  const document = (await (await fetch(`${gw.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
  t.equal(document.tls_client_certificate_bound_access_tokens, true);
  for (const member of [
    'token_endpoint_auth_methods_supported',
    'introspection_endpoint_auth_methods_supported',
    'revocation_endpoint_auth_methods_supported',
  ]) {
    t.ok(
      (document[member] as string[]).includes('tls_client_auth') && (document[member] as string[]).includes('self_signed_tls_client_auth'),
      member,
    );
  }
  t.notOk('mtls_endpoint_aliases' in document, 'the same endpoints serve mutual TLS (RFC 8705 §5)');
});

t.test('openid-client, unmodified, authenticates with TlsClientAuth through the proxy header', async (t) => {
  const proxyFetch: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('x-client-cert', encodeURIComponent(client1.pem));
    return fetch(input, { ...init, headers });
  };
  const config = await oidc.discovery(new URL(gw.config.issuer), 'mtls-dn', undefined, oidc.TlsClientAuth(), {
    execute: [oidc.allowInsecureRequests],
    [oidc.customFetch]: (url, options) => proxyFetch(url, options as RequestInit),
  });
  const tokens = await oidc.clientCredentialsGrant(config, { scope: 'api1' });
  t.equal(tokens.token_type, 'bearer');
  t.same(payloadOf(tokens.access_token).cnf, { 'x5t#S256': client1.thumbprint });
});
