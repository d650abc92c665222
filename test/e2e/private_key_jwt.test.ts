import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import * as oidc from 'openid-client';
import { createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify } from 'jose';
import { AuthorizeFlow, callbackUri } from '../helpers/authorize_flow.js';
import { addPasswordFixtures, passwordFixtures } from '../helpers/password_users.js';
import { startTestGateway } from '../helpers/test_gateway.js';

// Unmodified openid-client with its PrivateKeyJwt client authentication (RFC 7523 §2.2): it signs
// a fresh assertion (aud = the issuer, a random jti, exp a minute ahead) for every request.
const fixtures = await passwordFixtures();

t.test('openid-client authenticates with private_key_jwt: client_credentials, introspection, revocation and the code flow', async (t) => {
  const es256 = await generateKeyPair('ES256');
  const eddsa = await generateKeyPair('Ed25519');
  const es256Public = { ...(await exportJWK(es256.publicKey)), kid: 'es-1' };
  // The code-flow client publishes its key at a jwksUri, as a deployed client would.
  const jwksServer = createServer(async (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [{ ...(await exportJWK(eddsa.publicKey)), kid: 'ed-1', use: 'sig' }] }));
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    jwksServer.closeAllConnections();
    return new Promise<void>((resolve) => jwksServer.close(() => resolve()));
  });
  const jwksUri = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks`;

  const gw = await startTestGateway(t, {
    patch: (raw) => {
      addPasswordFixtures(raw, fixtures);
      (raw.clients as unknown[]).push(
        {
          clientId: 'service-a',
          jwks: { keys: [es256Public] },
          allowedGrantTypes: ['client_credentials'],
          allowedScopes: ['api1'],
        },
        {
          clientId: 'web-pk',
          jwksUri,
          allowedGrantTypes: ['authorization_code', 'refresh_token'],
          allowedScopes: ['openid', 'api1', 'offline_access'],
          allowOfflineAccess: true,
          redirectUris: [callbackUri],
        },
      );
    },
  });
  const issuer = new URL(gw.config.issuer);
  const jwks = createRemoteJWKSet(new URL(`${gw.url}/.well-known/openid-configuration/jwks`));

  t.test('client_credentials, then introspection and revocation of the token, each with a new assertion', async (t) => {
    const config = await oidc.discovery(issuer, 'service-a', undefined, oidc.PrivateKeyJwt({ key: es256.privateKey, kid: 'es-1' }), {
      execute: [oidc.allowInsecureRequests],
    });
    t.ok(config.serverMetadata().token_endpoint_auth_methods_supported?.includes('private_key_jwt'));
    t.ok(config.serverMetadata().token_endpoint_auth_signing_alg_values_supported?.includes('ES256'));
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'api1' });
    const { payload } = await jwtVerify(tokens.access_token, jwks, { issuer: gw.config.issuer, audience: 'urn:api1' });
    t.equal(payload.client_id, 'service-a');
    t.equal(payload.sub, 'service-a');
    const introspected = await oidc.tokenIntrospection(config, tokens.access_token);
    t.equal(introspected.active, true);
    t.equal(introspected.client_id, 'service-a');
    await oidc.tokenRevocation(config, tokens.access_token);
    t.equal((await oidc.tokenIntrospection(config, tokens.access_token)).active, false);
  });

  t.test('the same client with a key it does not have is refused: invalid_client', async (t) => {
    const stranger = await generateKeyPair('ES256');
    const config = await oidc.discovery(issuer, 'service-a', undefined, oidc.PrivateKeyJwt({ key: stranger.privateKey, kid: 'es-1' }), {
      execute: [oidc.allowInsecureRequests],
    });
    const refused = await oidc.clientCredentialsGrant(config, { scope: 'api1' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    t.type(refused, oidc.ResponseBodyError);
    t.match(refused, { error: 'invalid_client', status: 401 });
  });

  t.test('the authorization code flow and a refresh, with an EdDSA key from a jwksUri', async (t) => {
    const config = await oidc.discovery(issuer, 'web-pk', undefined, oidc.PrivateKeyJwt({ key: eddsa.privateKey, kid: 'ed-1' }), {
      execute: [oidc.allowInsecureRequests],
    });
    const flow = new AuthorizeFlow(gw);
    const verifier = oidc.randomPKCECodeVerifier();
    const response = await flow.code(
      flow.params('web-pk', await oidc.calculatePKCECodeChallenge(verifier), { state: 'st-pk', nonce: 'n-pk' }),
    );
    const tokens = await oidc.authorizationCodeGrant(config, new URL(`${callbackUri}?${response.toString()}`), {
      pkceCodeVerifier: verifier,
      expectedState: 'st-pk',
      expectedNonce: 'n-pk',
    });
    t.equal(tokens.claims()?.sub, 'sub-alice');
    t.equal(tokens.claims()?.aud, 'web-pk');
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string);
    t.type(refreshed.access_token, 'string');
  });
});
