/**
 * Dynamic client registration (RFC 7591) and its management (RFC 7592) over HTTP, on the memory
 * store, behind an initial access token (docs/endpoints.md, "Dynamic client registration"):
 * openid-client registers and runs the code flow with PKCE; the refusals; the per-address rate
 * last, since every registration of this file counts against it. Disabled registration (404) is
 * checked in test/gateway/client_registry/store_client_pages.test.ts, whose gateway has it off.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import * as oidc from 'openid-client';
import t from 'tap';
import { hashPassword } from '../../../core/crypto/password_hash.js';
import type { AuditEvent } from '../../../gateway/observability/events/audit_event.js';
import { AuthorizeFlow, callbackUri } from '../../helpers/authorize_flow.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

const initialAccessToken = 'initial-access-token-for-the-registration-test';
const tokenFile = path.join(t.testdir(), 'initial.token');
writeFileSync(tokenFile, `${initialAccessToken}\n`);
const maxRegistrations = 12;
const events: AuditEvent[] = [];
const aliceHash = await hashPassword('alice-pw');
const gateway = await startTestGateway(t, {
  patch: (raw) => {
    raw.users = [{ subjectId: 'sub-alice', username: 'alice', passwordHash: aliceHash }];
    raw.clientRegistry = { store: true };
    raw.dynamicClientRegistration = {
      enabled: true,
      initialAccessTokenFile: tokenFile,
      policy: {
        grantTypes: ['authorization_code', 'refresh_token'],
        scopes: ['openid', 'profile', 'api1', 'offline_access'],
        redirectUriSchemes: ['https', 'http'],
        tokenEndpointAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
      },
    };
    raw.throttling = { clientRegistration: { maxRequests: maxRegistrations, windowSeconds: 3600 } };
  },
  onEvent: (event) => events.push(event),
});
const registerUrl = `${gateway.url}/connect/register`;

/** `token` null: no Authorization header. */
function register(body: unknown, token: string | null = initialAccessToken): Promise<Response> {
  return fetch(registerUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token === null ? {} : { authorization: `Bearer ${token}` }) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

function manage(method: string, uri: string, token: string, body?: unknown): Promise<Response> {
  return fetch(uri, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function errorOf(res: Response): Promise<{ status: number; error: string }> {
  const body = (await res.json()) as { error: string };
  return { status: res.status, error: body.error };
}

const webMetadata = { redirect_uris: [callbackUri], grant_types: ['authorization_code'], scope: 'openid api1' };

t.test('discovery names the registration endpoint', async (t) => {
  const document = (await (await fetch(`${gateway.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
  t.equal(document.registration_endpoint, registerUrl);
});

t.test('openid-client registers a client, which then runs the code flow with PKCE', async (t) => {
  const config = await oidc.dynamicClientRegistration(
    new URL(gateway.url),
    { redirect_uris: [callbackUri], grant_types: ['authorization_code', 'refresh_token'], scope: 'openid api1 offline_access' },
    undefined,
    { initialAccessToken, execute: [oidc.allowInsecureRequests] },
  );
  const metadata = config.clientMetadata();
  t.type(metadata.client_id, 'string');
  t.type(metadata.client_secret, 'string');
  t.equal(metadata.client_secret_expires_at, 0);
  t.type(metadata.registration_access_token, 'string');
  t.equal(metadata.registration_client_uri, `${registerUrl}/${metadata.client_id}`);
  for (let i = 0; i < 100 && !events.some((e) => e.clientId === metadata.client_id); i++) await new Promise((r) => setTimeout(r, 10));
  t.match(events, [{ name: 'ClientCreated', clientId: metadata.client_id, endpoint: 'registration' }], 'an audit event');

  const verifier = oidc.randomPKCECodeVerifier();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: callbackUri,
    scope: 'openid api1 offline_access',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: 'st-1',
    nonce: 'n-1',
  });
  const flow = new AuthorizeFlow(gateway);
  const answer = await flow.code([...url.searchParams.entries()]);
  const tokens = await oidc.authorizationCodeGrant(config, new URL(`${callbackUri}?${answer.toString()}`), {
    pkceCodeVerifier: verifier,
    expectedState: 'st-1',
    expectedNonce: 'n-1',
  });
  t.type(tokens.access_token, 'string');
  t.type(tokens.refresh_token, 'string');
  t.equal(tokens.claims()?.sub, 'sub-alice');
});

t.test('refuses a registration without the initial access token, or with a wrong one (401)', async (t) => {
  const without = await register(webMetadata, null);
  t.equal(without.status, 401);
  t.match(without.headers.get('www-authenticate'), /^Bearer/);
  await without.arrayBuffer();
  t.same(await errorOf(await register(webMetadata, `${initialAccessToken}x`)), { status: 401, error: 'invalid_token' });
});

t.test('refuses metadata outside the policy (400)', async (t) => {
  t.same(await errorOf(await register({ ...webMetadata, grant_types: ['client_credentials'] })), {
    status: 400,
    error: 'invalid_client_metadata',
  });
  t.same(await errorOf(await register({ ...webMetadata, token_endpoint_auth_method: 'private_key_jwt' })), {
    status: 400,
    error: 'invalid_client_metadata',
  });
  t.same(await errorOf(await register({ ...webMetadata, redirect_uris: ['ftp://127.0.0.1/callback'] })), {
    status: 400,
    error: 'invalid_redirect_uri',
  });
  t.same(await errorOf(await register({ ...webMetadata, jwks: { keys: [] } })), { status: 400, error: 'invalid_client_metadata' });
  const large = await register({ ...webMetadata, client_name: 'x'.repeat(9000) });
  t.equal(large.status, 413, 'metadata over maxMetadataBytes');
  await large.arrayBuffer();
});

t.test('reads, updates and deletes a registration with its registration access token (RFC 7592)', async (t) => {
  const created = await register({ ...webMetadata, client_name: 'Before', token_endpoint_auth_method: 'none' });
  t.equal(created.status, 201);
  const client = (await created.json()) as Record<string, unknown> & {
    client_id: string;
    registration_access_token: string;
    registration_client_uri: string;
  };
  t.notOk('client_secret' in client, 'a public client gets no secret');
  const uri = client.registration_client_uri;
  const token = client.registration_access_token;

  t.same(await errorOf(await manage('GET', uri, `${token}x`)), { status: 401, error: 'invalid_token' }, 'a wrong token');
  t.same(await errorOf(await manage('GET', `${registerUrl}/nobody`, token)), { status: 401, error: 'invalid_token' }, 'another client');
  const read = await manage('GET', uri, token);
  t.equal(read.status, 200);
  t.match(await read.json(), { client_id: client.client_id, client_name: 'Before', redirect_uris: [callbackUri] });

  const updated = await manage('PUT', uri, token, { ...webMetadata, client_id: client.client_id, client_name: 'After' });
  t.equal(updated.status, 200);
  const after = (await updated.json()) as Record<string, unknown>;
  t.match(after, { client_name: 'After', token_endpoint_auth_method: 'client_secret_basic' });
  t.type(after.client_secret, 'string', 'turning confidential issues a secret');
  const secret = after.client_secret as string;
  const tokenStatus = async (): Promise<number> => {
    const res = await fetch(gateway.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization(client.client_id, secret) },
      body: 'grant_type=authorization_code&code=nothing&redirect_uri=x',
    });
    await res.arrayBuffer();
    return res.status;
  };
  t.equal(await tokenStatus(), 400, 'the client authenticates (invalid_grant, not invalid_client)');

  const deleted = await manage('DELETE', uri, token);
  t.equal(deleted.status, 204);
  t.equal((await manage('GET', uri, token)).status, 401, 'gone with its registration');
  t.equal(await tokenStatus(), 401, 'the deleted client no longer authenticates');
  // Audit events are delivered in batches: wait for the last one.
  const names = () => events.filter((e) => e.clientId === client.client_id && e.endpoint === 'registration').map((e) => e.name);
  for (let i = 0; i < 100 && names().length < 3; i++) await new Promise((r) => setTimeout(r, 10));
  t.same(names(), ['ClientCreated', 'ClientUpdated', 'ClientDeleted']);
});

t.test('a registration flood from one address gets 429', async (t) => {
  const answers = await Promise.all(Array.from({ length: maxRegistrations }, () => register(webMetadata)));
  const statuses = answers.map((r) => r.status);
  await Promise.all(answers.map((r) => r.arrayBuffer()));
  t.ok(statuses.includes(429), `${statuses.join(' ')}`);
  t.ok(statuses.filter((s) => s === 201).length < maxRegistrations, 'fewer registrations than asked');
  const refused = answers.find((r) => r.status === 429);
  t.ok(Number(refused?.headers.get('retry-after')) > 0, 'Retry-After');
});
