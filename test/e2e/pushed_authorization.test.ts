// Pushed authorization requests (RFC 9126) and request objects (RFC 9101) over real HTTP, on one
// real gateway: unmodified openid-client (buildAuthorizationUrlWithPAR, buildAuthorizationUrlWithJAR,
// DPoP at the pushed request) through the login and consent pages to the code exchange, then one
// subtest per rule a request must pass (docs/endpoints.md, "Pushed authorization requests",
// "Request objects").
import t from 'tap';
import * as oidc from 'openid-client';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { AuthorizeFlow, callbackUri, codeFlowClient, pkcePair } from '../helpers/authorize_flow.js';
import { basicAuthorization } from '../helpers/basic_authorization.js';
import { addPasswordFixtures, passwordFixtures } from '../helpers/password_users.js';
import { startTestGateway } from '../helpers/test_gateway.js';

const fixtures = await passwordFixtures();
// Short, so that the expiry test waits little: its request is pushed first, and the other tests
// run while it expires.
const lifetimeSeconds = 3;
const signer = await generateKeyPair('ES256');
const stranger = await generateKeyPair('ES256');
const publicJwk = { ...(await exportJWK(signer.publicKey)), kid: 'jar-1' };

const gw = await startTestGateway(t, {
  patch: (raw) => {
    addPasswordFixtures(raw, fixtures);
    raw.pushedAuthorizationRequests = { lifetimeSeconds: lifetimeSeconds };
    (raw.clients as unknown[]).push(
      codeFlowClient('web'),
      codeFlowClient('other'),
      codeFlowClient('par-only', { requirePushedAuthorizationRequests: true }),
      // private_key_jwt and request objects with the same keys (RFC 9101 §6.2).
      {
        ...codeFlowClient('signer'),
        clientSecrets: [],
        jwks: { keys: [publicJwk] },
        requireSignedRequestObject: true,
      },
    );
  },
});
const issuer = new URL(gw.config.issuer);
const parUrl = `${gw.url}/connect/par`;
const insecure = { execute: [oidc.allowInsecureRequests] };
const expiring = { uri: await pushedUri(), expiresAt: Date.now() + lifetimeSeconds * 1000 };

/** Signs in as alice and consents: the authorization response for an authorization URL. */
async function codeFor(url: URL): Promise<URL> {
  const flow = new AuthorizeFlow(gw);
  let page = await flow.browser.get(url.href);
  if (page.body.includes('name="password"')) page = await flow.login(page, 'alice', 'alice-pw');
  if (page.status !== 200 || !page.body.includes('value="allow"'))
    throw new Error(`no consent page: ${page.status} ${page.body.slice(0, 300)}`);
  const answer = await flow.decide(page, 'allow');
  if (answer.status !== 302 || answer.location === null) throw new Error(`no redirect: ${answer.status} ${answer.body.slice(0, 300)}`);
  return new URL(answer.location);
}

/** POST /connect/par as `clientId` with the secret `secret` (Basic). */
async function push(params: Record<string, string>, clientId = 'web', headers: Record<string, string> = {}) {
  const res = await fetch(parUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization(clientId), ...headers },
    body: new URLSearchParams(params).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The OAuth `error` a rejected openid-client call carries. */
async function errorOf(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
    return 'no error';
  } catch (err) {
    return (err as { error?: unknown }).error;
  }
}

function authorizeParams(clientId: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    client_id: clientId,
    redirect_uri: callbackUri,
    response_type: 'code',
    scope: 'openid api1',
    state: 'st-1',
    code_challenge: pkcePair().challenge,
    code_challenge_method: 'S256',
    ...extra,
  };
}

async function pushedUri(clientId = 'web', extra: Record<string, string> = {}): Promise<string> {
  const { status, body } = await push(authorizeParams(clientId, extra), clientId);
  if (status !== 201) throw new Error(`push answered ${status} ${JSON.stringify(body)}`);
  return body.request_uri as string;
}

function authorizeUrl(params: Record<string, string>): string {
  return `${gw.url}/connect/authorize?${new URLSearchParams(params).toString()}`;
}

async function requestObject(claims: Record<string, unknown>, key: CryptoKey = signer.privateKey, alg = 'ES256'): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ ...authorizeParams('signer'), ...claims })
    .setProtectedHeader({ alg, typ: 'oauth-authz-req+jwt', kid: 'jar-1' })
    .setIssuer((claims.iss as string | undefined) ?? 'signer')
    .setAudience((claims.aud as string | undefined) ?? gw.config.issuer)
    .setIssuedAt(now)
    .setExpirationTime((claims.exp as number | undefined) ?? now + 60)
    .setJti(crypto.randomUUID())
    .sign(key);
}

t.test('discovery names the endpoint and what it takes', async (t) => {
  const metadata = (await (await fetch(`${gw.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
  t.equal(metadata.pushed_authorization_request_endpoint, `${gw.config.issuer}/connect/par`);
  t.equal(metadata.require_pushed_authorization_requests, false);
  t.equal(metadata.request_parameter_supported, true);
  t.equal(metadata.request_uri_parameter_supported, false, 'no request_uri is fetched by reference');
  t.ok((metadata.request_object_signing_alg_values_supported as string[]).includes('ES256'));
  t.notOk((metadata.request_object_signing_alg_values_supported as string[]).includes('none'));
});

t.test('openid-client pushes the request, signs in through the pages and redeems the code', async (t) => {
  const config = await oidc.discovery(issuer, 'par-only', undefined, oidc.ClientSecretBasic('secret'), insecure);
  const verifier = oidc.randomPKCECodeVerifier();
  const url = await oidc.buildAuthorizationUrlWithPAR(config, {
    redirect_uri: callbackUri,
    scope: 'openid api1',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: 'st-par',
  });
  t.same([...url.searchParams.keys()].sort(), ['client_id', 'request_uri'], 'only client_id and request_uri travel in the browser');
  const callback = await codeFor(url);
  t.equal(callback.searchParams.get('state'), 'st-par');
  const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: 'st-par' });
  t.equal(tokens.claims()?.sub, 'sub-alice');
});

t.test('a DPoP proof at the pushed request binds the code to its key (RFC 9449 §10)', async (t) => {
  const config = await oidc.discovery(issuer, 'web', undefined, oidc.ClientSecretBasic('secret'), insecure);
  const keyPair = await oidc.randomDPoPKeyPair();
  const DPoP = oidc.getDPoPHandle(config, keyPair);
  const verifier = oidc.randomPKCECodeVerifier();
  const params = {
    redirect_uri: callbackUri,
    scope: 'openid api1',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  };

  const bound = await codeFor(await oidc.buildAuthorizationUrlWithPAR(config, params, { DPoP }));
  const other = oidc.getDPoPHandle(config, await oidc.randomDPoPKeyPair());
  t.equal(
    await errorOf(oidc.authorizationCodeGrant(config, bound, { pkceCodeVerifier: verifier }, undefined, { DPoP: other })),
    'invalid_grant',
    'a proof by another key is refused',
  );
  t.equal(
    await errorOf(oidc.authorizationCodeGrant(config, bound, { pkceCodeVerifier: verifier })),
    'invalid_grant',
    'no proof is refused',
  );
  const tokens = await oidc.authorizationCodeGrant(config, bound, { pkceCodeVerifier: verifier }, undefined, { DPoP });
  t.equal(tokens.token_type.toLowerCase(), 'dpop', 'the key that pushed redeems');
});

t.test('openid-client sends a signed request object, pushed or by value', async (t) => {
  const config = await oidc.discovery(issuer, 'signer', undefined, oidc.PrivateKeyJwt({ key: signer.privateKey, kid: 'jar-1' }), insecure);
  const verifier = oidc.randomPKCECodeVerifier();
  const params = {
    redirect_uri: callbackUri,
    scope: 'openid api1',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  };
  const byValue = await oidc.buildAuthorizationUrlWithJAR(config, params, { key: signer.privateKey, kid: 'jar-1' });
  t.same([...byValue.searchParams.keys()].sort(), ['client_id', 'request']);
  const tokens = await oidc.authorizationCodeGrant(config, await codeFor(byValue), { pkceCodeVerifier: verifier });
  t.equal(tokens.claims()?.sub, 'sub-alice');

  // RFC 9126 §3: the request object pushed (openid-client: JAR, then PAR of its URL's parameters).
  const jar = await oidc.buildAuthorizationUrlWithJAR(config, params, { key: signer.privateKey, kid: 'jar-1' });
  const pushed = await oidc.buildAuthorizationUrlWithPAR(config, jar.searchParams);
  const again = await oidc.authorizationCodeGrant(config, await codeFor(pushed), { pkceCodeVerifier: verifier });
  t.equal(again.claims()?.sub, 'sub-alice');
});

t.test('the authorization endpoint refuses', async (t) => {
  t.test('a request_uri used twice', async (t) => {
    const uri = await pushedUri();
    const first = await fetch(authorizeUrl({ client_id: 'web', request_uri: uri }), { redirect: 'manual' });
    t.equal(first.status, 200, 'the first use shows the login page');
    const second = await fetch(authorizeUrl({ client_id: 'web', request_uri: uri }), { redirect: 'manual' });
    t.equal(second.status, 400);
    t.match(await second.text(), /The request_uri is invalid, expired or already used\./);
  });
  t.test("another client's request_uri", async (t) => {
    const uri = await pushedUri('other');
    const res = await fetch(authorizeUrl({ client_id: 'web', request_uri: uri }), { redirect: 'manual' });
    t.equal(res.status, 400);
    t.match(await res.text(), /The request_uri is invalid, expired or already used\./);
    // The wrong client's attempt did not spend it: the client that pushed it still signs in with it.
    const own = await fetch(authorizeUrl({ client_id: 'other', request_uri: uri }), { redirect: 'manual' });
    t.equal(own.status, 200, 'the client that pushed it still gets the login page');
  });
  t.test('an expired request_uri', async (t) => {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiring.expiresAt + 100 - Date.now())));
    const res = await fetch(authorizeUrl({ client_id: 'web', request_uri: expiring.uri }), { redirect: 'manual' });
    t.equal(res.status, 400);
  });
  t.test('a request_uri Tessera did not issue, and one without client_id', async (t) => {
    const res = await fetch(authorizeUrl({ client_id: 'web', request_uri: 'https://client.example/req' }), { redirect: 'manual' });
    t.equal(res.status, 400);
    const noClient = await fetch(authorizeUrl({ request_uri: await pushedUri() }), { redirect: 'manual' });
    t.equal(noClient.status, 400);
  });
  t.test('the query of a client that must push', async (t) => {
    const res = await fetch(authorizeUrl(authorizeParams('par-only')), { redirect: 'manual' });
    t.equal(res.status, 302);
    const location = new URL(res.headers.get('location') as string);
    t.equal(location.searchParams.get('error'), 'invalid_request');
    t.equal(location.searchParams.get('error_description'), 'This client must push its authorization requests.');
  });
  t.test('a login form whose sealed request was changed', async (t) => {
    const flow = new AuthorizeFlow(gw);
    const page = await flow.browser.get(authorizeUrl({ client_id: 'par-only', request_uri: await pushedUri('par-only') }));
    t.equal(page.status, 200);
    const sealed = page.hidden('request') as string;
    t.notMatch(sealed, /client_id=/, 'the parameters travel sealed');
    const forged = await flow.login(page, 'alice', 'alice-pw', { request: new URLSearchParams(authorizeParams('par-only')).toString() });
    t.equal(forged.status, 302, 'a query put in its place is a request from the front channel');
    t.equal(new URL(forged.location as string).searchParams.get('error'), 'invalid_request');
  });
});

t.test('the pushed authorization request endpoint refuses', async (t) => {
  t.test('an unauthenticated client', async (t) => {
    const res = await fetch(parUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(authorizeParams('web')).toString(),
    });
    t.equal(res.status, 401);
    t.same(await res.json(), { error: 'invalid_client', error_description: 'Client authentication failed.' });
  });
  t.test('a request_uri inside', async (t) => {
    const { status, body } = await push(authorizeParams('web', { request_uri: 'urn:ietf:params:oauth:request_uri:x' }));
    t.equal(status, 400);
    t.equal(body.error, 'invalid_request');
  });
  t.test("another client's client_id", async (t) => {
    const { status, body } = await push(authorizeParams('other'), 'web');
    t.equal(status, 400);
    t.equal(body.error, 'invalid_request');
  });
  t.test('an unregistered redirect_uri, with a JSON error and no redirect', async (t) => {
    const { status, body } = await push(authorizeParams('web', { redirect_uri: 'https://evil.example/cb' }));
    t.equal(status, 400);
    t.same(body, { error: 'invalid_request', error_description: 'The redirect_uri is missing or not registered for this client.' });
  });
  t.test('what the authorization endpoint refuses, as JSON', async (t) => {
    const { status, body } = await push(authorizeParams('web', { response_type: 'token' }));
    t.equal(status, 400);
    t.same(body, { error: 'unsupported_response_type', error_description: 'Only response_type=code is supported.' });
    const scope = await push(authorizeParams('web', { scope: 'nope' }));
    t.equal(scope.body.error, 'invalid_scope');
  });
  t.test('a malformed dpop_jkt', async (t) => {
    const { status, body } = await push(authorizeParams('web', { dpop_jkt: 'short' }));
    t.equal(status, 400);
    t.equal(body.error, 'invalid_request');
  });
  t.test('a request object of a client with no keys', async (t) => {
    const { status, body } = await push({ client_id: 'web', request: await requestObject({ iss: 'web' }) });
    t.equal(status, 400);
    t.equal(body.error, 'invalid_request_object');
  });
});

t.test('a request object is refused', async (t) => {
  const now = Math.floor(Date.now() / 1000);
  const cases: [string, () => Promise<string>][] = [
    ['signed by another key', () => requestObject({}, stranger.privateKey)],
    ['for another audience', () => requestObject({ aud: 'https://other.example' })],
    ['from another issuer', () => requestObject({ iss: 'web' })],
    ['expired', () => requestObject({ exp: now - 60 })],
    ['living too long', () => requestObject({ exp: now + 7200 })],
    [
      'signed with HS256 and the public key as secret',
      async () =>
        new SignJWT(authorizeParams('signer'))
          .setProtectedHeader({ alg: 'HS256' })
          .setIssuer('signer')
          .setAudience(gw.config.issuer)
          .setExpirationTime(now + 60)
          .sign(new TextEncoder().encode(JSON.stringify(publicJwk))),
    ],
    [
      'unsigned (alg none)',
      async () => {
        const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
        return `${enc({ alg: 'none' })}.${enc({ ...authorizeParams('signer'), iss: 'signer', aud: gw.config.issuer, exp: now + 60 })}.`;
      },
    ],
  ];
  for (const [name, make] of cases) {
    t.test(name, async (t) => {
      const res = await fetch(authorizeUrl({ client_id: 'signer', request: await make() }), { redirect: 'manual' });
      t.equal(res.status, 400);
      t.match(await res.text(), /The request object is invalid\./);
    });
  }
  t.test('used twice (jti)', async (t) => {
    const jwt = await requestObject({});
    const first = await fetch(authorizeUrl({ client_id: 'signer', request: jwt }), { redirect: 'manual' });
    t.equal(first.status, 200);
    const second = await fetch(authorizeUrl({ client_id: 'signer', request: jwt }), { redirect: 'manual' });
    t.equal(second.status, 400);
  });
  t.test('absent, from a client that must sign', async (t) => {
    const res = await fetch(authorizeUrl(authorizeParams('signer')), { redirect: 'manual' });
    t.equal(res.status, 302);
    t.equal(
      new URL(res.headers.get('location') as string).searchParams.get('error_description'),
      'This client must send a signed request object.',
    );
  });
  t.test('only its parameters count (RFC 9101 §6.3)', async (t) => {
    const jwt = await requestObject({ state: 'inside' });
    const flow = new AuthorizeFlow(gw);
    const page = await flow.browser.get(authorizeUrl({ client_id: 'signer', request: jwt, state: 'outside' }));
    const consent = await flow.login(page, 'alice', 'alice-pw');
    const answer = await flow.decide(consent, 'allow');
    t.equal(new URL(answer.location as string).searchParams.get('state'), 'inside');
  });
});
