/**
 * The admin API authenticated by an access token of this issuer that grants `admin.tokenScope`
 * (docs/operations.md, "Admin API"; issue 34), over real HTTP: a client given the admin scope gets
 * a token at the token endpoint and manages clients with it; a token without the scope is `403
 * insufficient_scope`; an expired, foreign-signed, ID-token-typed or revoked token is `401`.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { SignJWT, importJWK, generateKeyPair, type JWK } from 'jose';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { sha256Secret, startTestGateway, writeSigningKey } from '../../helpers/test_gateway.js';

const { key, signing } = await writeSigningKey(t);
const gateway = await startTestGateway(t, {
  patch: (raw) => {
    raw.signing = signing;
    raw.clientRegistry = { store: true };
    raw.admin = { tokenScope: 'tessera:admin' };
    (raw.apiScopes as unknown[]).push({ name: 'tessera:admin' });
    (raw.clients as unknown[]).push({
      clientId: 'ops',
      clientSecrets: [{ value: sha256Secret('ops-secret') }],
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['tessera:admin', 'api1'],
    });
  },
});
const managementUrl = gateway.managementUrl as string;

async function accessToken(clientId: string, secret: string, scope: string): Promise<string> {
  const res = await fetch(gateway.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization(clientId, secret) },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope }).toString(),
  });
  const body = (await res.json()) as { access_token: string };
  return body.access_token;
}

function admin(method: string, pathname: string, token: string, body?: unknown): Promise<Response> {
  return fetch(`${managementUrl}${pathname}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** A token as this issuer would sign it (its own key), with `claims` over the usual ones. */
async function signed(claims: Record<string, unknown>, options: { jwk?: JWK; kid?: string; typ?: string } = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const privateKey = await importJWK(options.jwk ?? key.jwk, 'ES256');
  return new SignJWT({
    iss: gateway.config.issuer,
    client_id: 'ops',
    sub: 'ops',
    jti: randomUUID(),
    iat: now,
    exp: now + 300,
    scope: 'tessera:admin',
    ...claims,
  })
    .setProtectedHeader({ alg: 'ES256', kid: options.kid ?? key.kid, typ: options.typ ?? 'at+jwt' })
    .sign(privateKey);
}

const challenge = 'Bearer realm="admin", error="invalid_token"';

t.test('a client given the admin scope manages clients with its access token', async (t) => {
  const token = await accessToken('ops', 'ops-secret', 'tessera:admin');
  const created = await admin('POST', '/admin/clients', token, {
    clientId: 'billing',
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['api1'],
  });
  t.equal(created.status, 201);
  const { secret } = (await created.json()) as { secret: string };
  t.ok(secret, 'the generated secret');
  const shown = await admin('GET', '/admin/clients/billing', token);
  t.equal(shown.status, 200);
  t.equal(((await shown.json()) as { client: { clientId: string } }).client.clientId, 'billing');
  t.equal((await admin('GET', '/admin/clients?limit=10', token)).status, 200);
  t.equal((await admin('PATCH', '/admin/clients/billing', token, { enabled: false })).status, 200);
  t.equal((await admin('DELETE', '/admin/clients/billing', token)).status, 204);
});

t.test('a token without the admin scope is 403 insufficient_scope', async (t) => {
  for (const [clientId, secret, scope] of [
    ['ops', 'ops-secret', 'api1'],
    ['m2m', 'secret', 'api1 api2'],
  ] as const) {
    const token = await accessToken(clientId, secret, scope);
    const res = await admin('POST', '/admin/clients', token, { clientId: 'sneaky', allowedGrantTypes: ['client_credentials'] });
    t.equal(res.status, 403, `${clientId} ${scope}`);
    t.equal(res.headers.get('www-authenticate'), 'Bearer realm="admin", error="insufficient_scope", scope="tessera:admin"');
    t.match(await res.json(), { error: 'insufficient_scope' });
  }
  t.equal(
    (await admin('GET', '/admin/clients/sneaky', await accessToken('ops', 'ops-secret', 'tessera:admin'))).status,
    404,
    'nothing made',
  );
});

t.test('an expired, foreign-signed, mistyped, foreign-issued or revoked token is 401 invalid_token', async (t) => {
  t.equal(await admin('GET', '/admin/clients', await signed({})).then((r) => r.status), 200, 'a token signed by the key in service passes');
  const foreign = await generateKeyPair('ES256', { extractable: true });
  const { exportJWK } = await import('jose');
  const foreignJwk = await exportJWK(foreign.privateKey);
  const now = Math.floor(Date.now() / 1000);
  const cases: Record<string, string> = {
    expired: await signed({ iat: now - 3600, exp: now - 600 }),
    'signed by another key, same kid': await signed({}, { jwk: foreignJwk }),
    'signed by another key, its own kid': await signed({}, { jwk: foreignJwk, kid: 'foreign' }),
    'an ID token (typ JWT)': await signed({}, { typ: 'JWT' }),
    'another issuer': await signed({ iss: 'https://elsewhere.example' }),
    'a certificate-bound token as a bearer token': await signed({ cnf: { 'x5t#S256': 'A'.repeat(43) } }),
    'not a JWT': 'not-a-jwt-0123456789-0123456789-0123456789',
  };
  for (const [name, token] of Object.entries(cases)) {
    const res = await admin('GET', '/admin/clients', token);
    t.equal(res.status, 401, name);
    t.equal(res.headers.get('www-authenticate'), challenge, name);
  }

  const token = await accessToken('ops', 'ops-secret', 'tessera:admin');
  t.equal((await admin('GET', '/admin/clients', token)).status, 200);
  const revoked = await fetch(`${gateway.url}/connect/revocation`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization('ops', 'ops-secret') },
    body: new URLSearchParams({ token }).toString(),
  });
  t.equal(revoked.status, 200);
  const after = await admin('GET', '/admin/clients', token);
  t.equal(after.status, 401, 'revoked');
  t.equal(after.headers.get('www-authenticate'), challenge);

  const none = await fetch(`${managementUrl}/admin/clients`);
  t.equal(none.status, 401);
  t.equal(none.headers.get('www-authenticate'), 'Bearer realm="admin"', 'no credentials: the scheme alone (RFC 6750 §3.1)');
});
