/**
 * Keys of store-kept clients (docs/configuration.md, "clientRegistry"), over real HTTP with two
 * gateways on one Redis: a client created through gateway A's admin API with an inline `jwks`
 * authenticates with a signed assertion (jose) at gateway B, with or without `client_id` in the
 * form; a key rotated through the admin API is refused at B within a second; a `jwksUri` client,
 * `self_signed_tls_client_auth` and `tls_client_auth` clients work the same way; and dynamic
 * client registration (RFC 7591) registers a `private_key_jwt` client with `jwks`.
 */
import { randomUUID, X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t from 'tap';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { issuedCertificate, selfSignedCertificate, type TestCertificate } from '../../helpers/client_certificates.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);

const dir = t.testdir();
const adminToken = 'admin-token-for-the-keys-test-0123456789';
const tokenFile = path.join(dir, 'admin.token');
writeFileSync(tokenFile, `${adminToken}\n`);
const ca = selfSignedCertificate(dir, 'ca', '/CN=Test CA');
const caFile = path.join(dir, 'ca.pem');
writeFileSync(caFile, ca.pem);
const issued = issuedCertificate(dir, 'issued', ca, '/O=Acme/CN=store-mtls', 'DNS:store-mtls.example');
const selfCert = selfSignedCertificate(dir, 'self', '/CN=self-signed store client');
const otherSelfCert = selfSignedCertificate(dir, 'other-self', '/CN=self-signed store client');
const keyPrefix = `tessera-keys-${process.pid}:`;

const start = (): Promise<TestGateway> =>
  startTestGateway(t, {
    patch: (raw) => {
      raw.store = { type: 'redis', url: redis.url, keyPrefix };
      raw.clientRegistry = { store: true, pollIntervalMs: 250 };
      raw.admin = { tokenFile };
      raw.trustedProxies = ['127.0.0.1'];
      raw.mtls = { caFile };
      raw.dynamicClientRegistration = {
        enabled: true,
        policy: {
          grantTypes: ['client_credentials'],
          scopes: ['api1'],
          tokenEndpointAuthMethods: ['private_key_jwt', 'tls_client_auth'],
        },
      };
    },
  });

const [a, b] = await Promise.all([start(), start()]);

function admin(gateway: TestGateway, method: string, pathname: string, body?: unknown): Promise<Response> {
  return fetch(`${gateway.managementUrl}${pathname}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

interface Pair {
  readonly privateKey: CryptoKey;
  readonly jwk: JWK;
}

async function keyPair(kid: string): Promise<Pair> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

function assertion(gateway: TestGateway, clientId: string, key: Pair): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: clientId, sub: clientId, aud: gateway.config.issuer, iat: now, exp: now + 60, jti: randomUUID() })
    .setProtectedHeader({ alg: 'ES256', kid: key.jwk.kid as string })
    .sign(key.privateKey);
}

/** A `client_credentials` request with a signed assertion; `client_id` in the form only when asked. */
async function withAssertion(gateway: TestGateway, clientId: string, key: Pair, sendClientId = false): Promise<number> {
  const form = new URLSearchParams({
    grant_type: 'client_credentials',
    client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    client_assertion: await assertion(gateway, clientId, key),
    ...(sendClientId ? { client_id: clientId } : {}),
  });
  const res = await fetch(gateway.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
  });
  await res.arrayBuffer();
  return res.status;
}

/** A `client_credentials` request as the TLS-terminating proxy (127.0.0.1) sends it, certificate in `X-Client-Cert`. */
function withCertificate(gateway: TestGateway, clientId: string, cert: TestCertificate): Promise<number> {
  const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId }).toString();
  return new Promise((resolve, reject) => {
    const req = request(
      gateway.tokenUrl,
      {
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-client-cert': encodeURIComponent(cert.pem),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Milliseconds until `check` holds, polling every 100 ms (under the failure throttle's 10 per client); Infinity past `limitMs`. */
async function within(limitMs: number, check: () => Promise<boolean>): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > limitMs) return Number.POSITIVE_INFINITY;
    await new Promise((r) => setTimeout(r, 100));
  }
  return performance.now() - started;
}

const jwkOf = (cert: TestCertificate): JWK => new X509Certificate(cert.pem).publicKey.export({ format: 'jwk' }) as JWK;
const base = { allowedGrantTypes: ['client_credentials'], allowedScopes: ['api1'] };

t.test('private_key_jwt with jwks: created through the admin API, its rotated key takes over within a second', async (t) => {
  const first = await keyPair('k1');
  const second = await keyPair('k2');
  const created = await admin(a, 'POST', '/admin/clients', { clientId: 'jwt-1', ...base, jwks: { keys: [first.jwk] } });
  t.equal(created.status, 201, 'created through the admin API');
  t.equal(await withAssertion(a, 'jwt-1', first), 200, 'at A');
  t.equal(await withAssertion(b, 'jwt-1', first), 200, 'at B, the client id from the assertion alone');
  t.equal(await withAssertion(b, 'jwt-1', first, true), 200, 'at B, with client_id in the form');
  t.equal(await withAssertion(b, 'jwt-1', second), 401, 'a key the client does not have');

  const rotated = await admin(a, 'PATCH', '/admin/clients/jwt-1', { jwks: { keys: [second.jwk] } });
  t.equal(rotated.status, 200, 'changed through the admin API');
  t.equal(await withAssertion(a, 'jwt-1', first), 401, 'the old key is refused at A at once');
  t.equal(await withAssertion(a, 'jwt-1', second), 200, 'the new key works at A');
  const ms = await within(1000, async () => (await withAssertion(b, 'jwt-1', first)) === 401);
  t.ok(ms <= 1000, `old key refused at B after ${ms.toFixed(0)} ms`);
  t.equal(await withAssertion(b, 'jwt-1', second), 200, 'the new key works at B');
});

t.test('private_key_jwt with jwksUri: a store-kept client fetches its keys from its URI', async (t) => {
  const key = await keyPair('uri-1');
  const server = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [key.jwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const jwksUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
  const created = await admin(a, 'POST', '/admin/clients', { clientId: 'jwt-uri', ...base, jwksUri });
  t.equal(created.status, 201, 'created through the admin API');
  t.equal(await withAssertion(b, 'jwt-uri', key), 200);
  t.equal(await withAssertion(b, 'jwt-uri', await keyPair('uri-1')), 401, 'another key with the same kid');
});

t.test('self_signed_tls_client_auth: a store-kept client, its certificate key replaced within a second', async (t) => {
  const created = await admin(a, 'POST', '/admin/clients', {
    clientId: 'mtls-self',
    ...base,
    tokenEndpointAuthMethod: 'self_signed_tls_client_auth',
    jwks: { keys: [jwkOf(selfCert)] },
  });
  t.equal(created.status, 201, 'created through the admin API');
  t.equal(await withCertificate(b, 'mtls-self', selfCert), 200);
  t.equal(await withCertificate(b, 'mtls-self', otherSelfCert), 401, 'another certificate');
  const rotated = await admin(a, 'PATCH', '/admin/clients/mtls-self', { jwks: { keys: [jwkOf(otherSelfCert)] } });
  t.equal(rotated.status, 200, 'changed through the admin API');
  const ms = await within(1000, async () => (await withCertificate(b, 'mtls-self', selfCert)) === 401);
  t.ok(ms <= 1000, `old certificate refused at B after ${ms.toFixed(0)} ms`);
  t.equal(await withCertificate(b, 'mtls-self', otherSelfCert), 200, 'the new one works');
});

t.test('tls_client_auth: a store-kept client named by its certificate subject', async (t) => {
  const created = await admin(a, 'POST', '/admin/clients', {
    clientId: 'mtls-ca',
    ...base,
    tokenEndpointAuthMethod: 'tls_client_auth',
    tlsClientAuthSanDns: 'store-mtls.example',
  });
  t.equal(created.status, 201, 'created through the admin API');
  t.equal(await withCertificate(b, 'mtls-ca', issued), 200);
  t.equal(await withCertificate(b, 'mtls-ca', selfCert), 401, 'a certificate from no trusted CA');
  const incomplete = await admin(a, 'POST', '/admin/clients', {
    clientId: 'mtls-none',
    ...base,
    tokenEndpointAuthMethod: 'tls_client_auth',
  });
  t.equal(incomplete.status, 400, 'the same cross references as the config file: tls_client_auth names its subject');
});

t.test('dynamic client registration: private_key_jwt with jwks, then an assertion at the other gateway', async (t) => {
  const key = await keyPair('dcr-1');
  const registered = await fetch(`${a.url}/connect/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      grant_types: ['client_credentials'],
      response_types: [],
      scope: 'api1',
      token_endpoint_auth_method: 'private_key_jwt',
      jwks: { keys: [key.jwk] },
    }),
  });
  const metadata = (await registered.json()) as Record<string, unknown>;
  t.equal(registered.status, 201, JSON.stringify(metadata));
  t.equal(metadata.token_endpoint_auth_method, 'private_key_jwt');
  t.same((metadata.jwks as { keys: JWK[] }).keys[0]?.kid, 'dcr-1', 'the keys are read back');
  t.equal(metadata.client_secret, undefined, 'no secret for a key client');
  t.equal(await withAssertion(b, metadata.client_id as string, key), 200);
});

t.test('dynamic client registration: tls_client_auth with one certificate name (RFC 8705 §2.1.2)', async (t) => {
  const register = (metadata: Record<string, unknown>) =>
    fetch(`${a.url}/connect/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_types: ['client_credentials'], response_types: [], scope: 'api1', ...metadata }),
    });
  const registered = await register({ token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_san_dns: 'store-mtls.example' });
  const metadata = (await registered.json()) as Record<string, unknown>;
  t.equal(registered.status, 201, JSON.stringify(metadata));
  t.equal(metadata.tls_client_auth_san_dns, 'store-mtls.example');
  t.equal(await withCertificate(b, metadata.client_id as string, issued), 200);
  t.equal(await withCertificate(b, metadata.client_id as string, selfCert), 401);
  const none = await register({ token_endpoint_auth_method: 'tls_client_auth' });
  t.equal(none.status, 400, 'no certificate name');
  const keys = await register({ token_endpoint_auth_method: 'tls_client_auth', tls_client_auth_san_dns: 'x.example', jwks: { keys: [] } });
  t.equal(keys.status, 400, 'keys with a method that takes none');
  const secretMethod = await register({ token_endpoint_auth_method: 'client_secret_basic' });
  t.equal(secretMethod.status, 400, 'a method outside the policy');
});
