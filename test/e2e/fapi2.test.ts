// The fapi2 client profile (FAPI 2.0 Security Profile §5.3.2, docs/endpoints.md "FAPI 2.0") over
// real HTTP on one real gateway: unmodified openid-client through PAR, PKCE, private_key_jwt and
// DPoP to the tokens and a refresh, then one subtest per rule a request must pass. What a config
// must say is test/gateway/config/client_profiles.test.ts.
import { X509Certificate } from 'node:crypto';
import t from 'tap';
import * as oidc from 'openid-client';
import { decodeJwt, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { AuthorizeFlow, callbackUri, pkcePair } from '../helpers/authorize_flow.js';
import { basicAuthorization } from '../helpers/basic_authorization.js';
import { selfSignedCertificate } from '../helpers/client_certificates.js';
import { addPasswordFixtures, passwordFixtures } from '../helpers/password_users.js';
import { startTestGateway } from '../helpers/test_gateway.js';

const fixtures = await passwordFixtures();
const signer = await generateKeyPair('ES256');
const signerJwk = { ...(await exportJWK(signer.publicKey)), kid: 'fapi-1' };
const certificate = selfSignedCertificate(t.testdir(), 'fapi-mtls', '/CN=fapi-mtls');

const gw = await startTestGateway(t, {
  patch: (raw) => {
    addPasswordFixtures(raw, fixtures);
    // The mTLS client's certificate comes from a TLS-terminating proxy (docs/endpoints.md, "Mutual TLS").
    raw.trustedProxies = ['127.0.0.1'];
    (raw.clients as unknown[]).push(
      {
        clientId: 'fapi',
        profile: 'fapi2',
        jwks: { keys: [signerJwk] },
        allowedGrantTypes: ['authorization_code', 'refresh_token', 'client_credentials'],
        allowedScopes: ['openid', 'api1', 'offline_access'],
        allowOfflineAccess: true,
        redirectUris: [callbackUri],
      },
      {
        clientId: 'fapi-mtls',
        profile: 'fapi2',
        tokenEndpointAuthMethod: 'self_signed_tls_client_auth',
        jwks: { keys: [new X509Certificate(certificate.pem).publicKey.export({ format: 'jwk' })] },
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
      },
    );
  },
});
const issuer = new URL(gw.config.issuer);
const insecure = { execute: [oidc.allowInsecureRequests] };
const config = await oidc.discovery(issuer, 'fapi', undefined, oidc.PrivateKeyJwt({ key: signer.privateKey, kid: 'fapi-1' }), insecure);

/** A private_key_jwt assertion of the `fapi` client (RFC 7523 §3), `aud` as given. */
async function assertion(aud: string | string[] = gw.config.issuer): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: 'fapi-1' })
    .setIssuer('fapi')
    .setSubject('fapi')
    .setAudience(aud)
    .setIssuedAt()
    .setExpirationTime('1m')
    .setJti(crypto.randomUUID())
    .sign(signer.privateKey);
}

/** POSTs a form to `path` as the `fapi` client, authenticated by an assertion. */
async function post(path: string, params: Record<string, string>, aud?: string | string[], headers: Record<string, string> = {}) {
  const body = new URLSearchParams({
    ...params,
    client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    client_assertion: await assertion(aud),
  });
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: body.toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The OAuth `error` and `error_description` a rejected openid-client call carries. */
async function errorOf(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
    return 'no error';
  } catch (err) {
    const { error, error_description } = err as { error?: unknown; error_description?: unknown };
    return { error, error_description };
  }
}

const senderConstraintRequired = {
  error: 'invalid_request',
  error_description: "This client's tokens must be sender-constrained: send a DPoP proof or a TLS client certificate.",
};

let refreshToken: string | undefined;

t.test('openid-client pushes, signs in, redeems the code with DPoP and refreshes', async (t) => {
  const DPoP = oidc.getDPoPHandle(config, await oidc.randomDPoPKeyPair());
  const verifier = oidc.randomPKCECodeVerifier();
  const url = await oidc.buildAuthorizationUrlWithPAR(
    config,
    {
      redirect_uri: callbackUri,
      scope: 'openid api1 offline_access',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state: 'st-fapi',
    },
    { DPoP },
  );
  const flow = new AuthorizeFlow(gw);
  const login = await flow.browser.get(url.href);
  const consent = await flow.login(login, 'alice', 'alice-pw');
  const answer = await flow.decide(consent, 'allow');
  t.equal(answer.status, 302);
  const callback = new URL(answer.location ?? '');
  t.equal(callback.searchParams.get('iss'), gw.config.issuer, 'the response names the issuer (RFC 9207, FAPI 2.0 §5.3.2.2)');
  // openid-client checks iss (discovery says authorization_response_iss_parameter_supported).
  const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: 'st-fapi' }, undefined, {
    DPoP,
  });
  t.equal(tokens.token_type.toLowerCase(), 'dpop');
  t.type((decodeJwt(tokens.access_token).cnf as { jkt?: unknown } | undefined)?.jkt, 'string', 'the access token is bound to the key');
  t.equal(tokens.claims()?.sub, 'sub-alice');
  t.type(tokens.refresh_token, 'string');
  refreshToken = tokens.refresh_token;
  const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token ?? '', undefined, { DPoP });
  t.equal(refreshed.token_type.toLowerCase(), 'dpop', 'a refresh with a proof gets a bound token');
  refreshToken = refreshed.refresh_token ?? refreshToken;
});

t.test('an mTLS client gets tokens bound to its certificate without asking for it (RFC 8705 §3)', async (t) => {
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-client-cert': encodeURIComponent(certificate.pem) },
    body: 'grant_type=client_credentials&client_id=fapi-mtls&scope=api1',
  });
  t.equal(res.status, 200);
  const body = (await res.json()) as { access_token: string };
  t.same(decodeJwt(body.access_token).cnf, { 'x5t#S256': certificate.thumbprint });
});

t.test('the profile refuses', async (t) => {
  t.test('an authorization request in the query, not pushed (FAPI 2.0 §5.3.2.2)', async (t) => {
    const flow = new AuthorizeFlow(gw);
    const page = await flow.authorize(flow.params('fapi', pkcePair().challenge));
    t.equal(page.status, 302);
    const location = new URL(page.location ?? '');
    t.equal(location.searchParams.get('error'), 'invalid_request');
    t.equal(location.searchParams.get('error_description'), 'This client must push its authorization requests.');
  });

  t.test('a pushed request with plain PKCE, or none (FAPI 2.0 §5.3.2.2)', async (t) => {
    const params = { response_type: 'code', redirect_uri: callbackUri, scope: 'openid' };
    const plain = await post('/connect/par', { ...params, code_challenge: 'x'.repeat(43), code_challenge_method: 'plain' });
    t.same(plain, { status: 400, body: { error: 'invalid_request', error_description: 'The code_challenge_method must be S256.' } });
    const none = await post('/connect/par', params);
    t.same(none, { status: 400, body: { error: 'invalid_request', error_description: 'The client must send a PKCE code_challenge.' } });
  });

  t.test('a token request without a DPoP proof or a certificate (FAPI 2.0 §5.3.2.1)', async (t) => {
    t.same(await post('/connect/token', { grant_type: 'client_credentials', scope: 'api1' }), {
      status: 400,
      body: senderConstraintRequired,
    });
  });

  t.test('a refresh without a proof, leaving the refresh token usable', async (t) => {
    t.same(await errorOf(oidc.refreshTokenGrant(config, refreshToken ?? '')), senderConstraintRequired);
    const DPoP = oidc.getDPoPHandle(config, await oidc.randomDPoPKeyPair());
    const refreshed = await oidc.refreshTokenGrant(config, refreshToken ?? '', undefined, { DPoP });
    t.equal(refreshed.token_type.toLowerCase(), 'dpop');
  });

  t.test('an assertion whose aud is an array, not the issuer as a string (FAPI 2.0 §5.3.2.1)', async (t) => {
    const answer = await post('/connect/token', { grant_type: 'client_credentials', scope: 'api1' }, [gw.config.issuer]);
    t.same(answer, { status: 401, body: { error: 'invalid_client', error_description: 'Client authentication failed.' } });
  });

  t.test('a client secret', async (t) => {
    const res = await fetch(gw.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization('fapi', 'secret') },
      body: 'grant_type=client_credentials&scope=api1',
    });
    t.equal(res.status, 401, 'a fapi2 client has no secret (its config may not list one)');
  });
});
