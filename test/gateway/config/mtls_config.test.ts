// Config checks of mutual TLS clients (RFC 8705 §2; docs/configuration.md, "Mutual TLS clients").
import t from 'tap';
import { validateConfig } from '../../../gateway/config/load.js';
import { ConfigError } from '../../../gateway/config/config_error.js';

const problemsOf = (clients: unknown[], mtls?: unknown): string[] => {
  try {
    validateConfig(
      { issuer: 'http://127.0.0.1:5000', apiScopes: [{ name: 'api1' }], clients, ...(mtls ? { mtls } : {}) },
      { configDir: '/tmp', env: {} },
    );
    return [];
  } catch (err) {
    return (err as ConfigError).problems.map((p) => `${p.path}: ${p.message}`);
  }
};
const client = (fields: Record<string, unknown>) => ({
  clientId: 'c',
  allowedGrantTypes: ['client_credentials'],
  allowedScopes: ['api1'],
  ...fields,
});

t.test('tls_client_auth needs exactly one name and mtls.caFile', async (t) => {
  t.same(problemsOf([client({ tokenEndpointAuthMethod: 'tls_client_auth', tlsClientAuthSanDns: 'a.example' })], { caFile: 'ca.pem' }), []);
  t.match(problemsOf([client({ tokenEndpointAuthMethod: 'tls_client_auth', tlsClientAuthSanDns: 'a.example' })]), [
    /^mtls\.caFile: is required by clients\[0\]/,
  ]);
  t.match(problemsOf([client({ tokenEndpointAuthMethod: 'tls_client_auth' })], { caFile: 'ca.pem' }), [/needs exactly one of/]);
  t.match(
    problemsOf([client({ tokenEndpointAuthMethod: 'tls_client_auth', tlsClientAuthSanDns: 'a', tlsClientAuthSanUri: 'u' })], {
      caFile: 'ca.pem',
    }),
    [/needs exactly one of/],
  );
});

t.test('self_signed_tls_client_auth needs jwks; names without tls_client_auth are refused', async (t) => {
  t.match(problemsOf([client({ tokenEndpointAuthMethod: 'self_signed_tls_client_auth' })]), [
    /clients\[0\]\.jwks: self_signed_tls_client_auth needs jwks/,
  ]);
  t.match(problemsOf([client({ clientSecrets: [{ value: 'K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols=' }], tlsClientAuthSanDns: 'a' })]), [
    /tokenEndpointAuthMethod: must be "tls_client_auth"/,
  ]);
});
