// What a fapi2 client's config must say, and what the profile sets (FAPI 2.0 Security Profile
// §5.3.2; gateway/config/client_profiles.ts, docs/configuration.md "Clients").
import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { validateConfig, type LoadedConfig } from '../../../gateway/config/load.js';
import { ConfigError } from '../../../gateway/config/config_error.js';

const publicJwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
const secret = { value: 'K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols=' };

const load = (clients: unknown[]): LoadedConfig =>
  validateConfig(
    { issuer: 'http://127.0.0.1:5000', identityResources: [{ name: 'openid', claims: ['sub'] }], apiScopes: [{ name: 'api1' }], clients },
    { configDir: '/tmp', env: {} },
  );
const problemsOf = (clients: unknown[]): string[] => {
  try {
    load(clients);
    return [];
  } catch (err) {
    return (err as ConfigError).problems.map((p) => `${p.path}: ${p.message}`);
  }
};
const fapi = (fields: Record<string, unknown> = {}) => ({
  clientId: 'bank',
  profile: 'fapi2',
  jwks: { keys: [publicJwk] },
  allowedGrantTypes: ['authorization_code', 'refresh_token'],
  allowedScopes: ['openid', 'api1'],
  redirectUris: ['https://bank.example/cb', 'http://127.0.0.1:7000/cb'],
  ...fields,
});

t.test('a private_key_jwt client with https or loopback redirect URIs passes, and must push with codes of at most 60 s', async (t) => {
  t.same(problemsOf([fapi()]), []);
  const [client] = load([fapi({ authorizationCodeLifetime: 600 })]).clients;
  t.equal(client?.requirePushedAuthorizationRequests, true, 'FAPI 2.0 §5.3.2.2: pushed requests only');
  t.equal(client?.authorizationCodeLifetime, 60, 'FAPI 2.0 §5.3.2.1: a longer lifetime is shortened');
  t.equal(load([fapi({ authorizationCodeLifetime: 30 })]).clients[0]?.authorizationCodeLifetime, 30, 'a shorter one stays');
  t.equal(load([{ ...fapi(), profile: undefined }]).clients[0]?.authorizationCodeLifetime, 300, 'other clients keep theirs');
});

t.test('mutual TLS clients pass', async (t) => {
  t.same(problemsOf([fapi({ tokenEndpointAuthMethod: 'self_signed_tls_client_auth' })]), []);
});

t.test('the password grant is refused', async (t) => {
  t.same(problemsOf([fapi({ allowedGrantTypes: ['authorization_code', 'password'] })]), [
    'clients[0].allowedGrantTypes[1]: fapi2: remove "password" (FAPI 2.0 §5.3.2.1 forbids the password grant)',
  ]);
});

t.test('client secrets and public clients are refused', async (t) => {
  t.same(problemsOf([fapi({ jwks: undefined, clientSecrets: [secret] })]), [
    'clients[0].clientSecrets: must be empty for a fapi2 client (FAPI 2.0 §5.3.2.1: no client secrets): give it jwks or jwksUri (private_key_jwt) or a tokenEndpointAuthMethod (mutual TLS)',
  ]);
  t.same(problemsOf([fapi({ jwks: undefined })]), [
    'clients[0].jwks: is required for a fapi2 client without tokenEndpointAuthMethod (FAPI 2.0 §5.3.2.1): give it jwks or jwksUri (private_key_jwt) or a tokenEndpointAuthMethod (mutual TLS)',
  ]);
  t.match(problemsOf([fapi({ jwks: undefined, requireClientSecret: false })]), [
    'clients[0].requireClientSecret: must not be false for a fapi2 client (FAPI 2.0 §5.3.2.1: confidential clients only)',
    /^clients\[0\]\.jwks: is required/,
  ]);
});

t.test('PKCE off, the token endpoint as aud, and an http redirect URI are refused', async (t) => {
  t.same(problemsOf([fapi({ requirePkce: false, allowTokenEndpointAudience: true, redirectUris: ['http://bank.example/cb'] })]), [
    'clients[0].allowTokenEndpointAudience: must not be true for a fapi2 client (FAPI 2.0 §5.3.2.1: aud is the issuer alone)',
    'clients[0].requirePkce: must not be false for a fapi2 client (FAPI 2.0 §5.3.2.2 requires PKCE with S256)',
    'clients[0].redirectUris[0]: must be https for a fapi2 client, or http on a loopback address (FAPI 2.0 §5.3.2.2, RFC 8252 §7.3)',
  ]);
});

t.test('an unknown profile is refused by name', async (t) => {
  t.match(problemsOf([fapi({ profile: 'fapi1' })]), [/^clients\[0\]\.profile: must be "fapi2"/]);
});
