/**
 * Client profiles (`clients[].profile`, docs/endpoints.md "FAPI 2.0"). `fapi2` is the FAPI 2.0
 * Security Profile (OpenID Foundation, final), §5.3.2, the rules of the authorization server,
 * for one client. What a client's config says is checked when it loads, each broken rule a named
 * problem ({@link checkClientProfile}); what the profile implies for the client's settings is
 * applied then too ({@link applyClientProfile}), so the checks every client already gets (pushed
 * requests, PKCE, the code's lifetime) enforce it; the one rule only a request shows, the sender
 * constraint of its tokens, is the token endpoint's (`gateway/endpoints/token_endpoint.ts`).
 */
import type { ConfigProblem } from './config_error.js';
import type { TesseraConfig } from './schema.js';

type ClientEntry = TesseraConfig['clients'][number];

/** FAPI 2.0 §5.3.2.1: authorization codes live at most 60 seconds. */
export const fapi2MaxCodeLifetimeSeconds = 60;

/** Hosts an `http` redirect URI may name: a native client's loopback interface (RFC 8252 §7.3). */
const loopbackHosts = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** The problems of a client's config under its profile; none without one. */
export function checkClientProfile(client: ClientEntry, at: string): ConfigProblem[] {
  if (client.profile !== 'fapi2') return [];
  const problems: ConfigProblem[] = [];
  const report = (path: string, message: string): void => {
    problems.push({ path, message });
  };
  // §5.3.2.1: "shall reject requests using the resource owner password credentials grant". The
  // implicit flow needs no rule: Tessera's authorization endpoint answers response_type=code only.
  client.allowedGrantTypes.forEach((grantType, j) => {
    if (grantType === 'password')
      report(`${at}.allowedGrantTypes[${j}]`, 'fapi2: remove "password" (FAPI 2.0 §5.3.2.1 forbids the password grant)');
  });
  // §5.3.2.1: confidential clients only, authenticated by mutual TLS (RFC 8705 §2) or
  // private_key_jwt. A client with keys and secrets, or with tls_client_auth and secrets, is
  // reported by the cross references already.
  const hasKeys = client.jwks !== undefined || client.jwksUri !== undefined;
  if (!client.requireClientSecret)
    report(`${at}.requireClientSecret`, 'must not be false for a fapi2 client (FAPI 2.0 §5.3.2.1: confidential clients only)');
  if (!hasKeys && client.tokenEndpointAuthMethod === undefined) {
    const fix = 'give it jwks or jwksUri (private_key_jwt) or a tokenEndpointAuthMethod (mutual TLS)';
    if (client.clientSecrets.length > 0)
      report(`${at}.clientSecrets`, `must be empty for a fapi2 client (FAPI 2.0 §5.3.2.1: no client secrets): ${fix}`);
    else report(`${at}.jwks`, `is required for a fapi2 client without tokenEndpointAuthMethod (FAPI 2.0 §5.3.2.1): ${fix}`);
  }
  // §5.3.2.1: the issuer identifier alone as an assertion's aud.
  if (client.allowTokenEndpointAudience)
    report(`${at}.allowTokenEndpointAudience`, 'must not be true for a fapi2 client (FAPI 2.0 §5.3.2.1: aud is the issuer alone)');
  // §5.3.2.2: PKCE with S256 (Tessera takes no other method).
  if (!client.requirePkce) report(`${at}.requirePkce`, 'must not be false for a fapi2 client (FAPI 2.0 §5.3.2.2 requires PKCE with S256)');
  // §5.3.2.2: no authorization response over unencrypted connections: https redirect URIs, or
  // http to a native client's loopback interface.
  client.redirectUris.forEach((uri, j) => {
    const url = new URL(uri);
    if (url.protocol === 'https:' || (url.protocol === 'http:' && loopbackHosts.has(url.hostname))) return;
    report(
      `${at}.redirectUris[${j}]`,
      'must be https for a fapi2 client, or http on a loopback address (FAPI 2.0 §5.3.2.2, RFC 8252 §7.3)',
    );
  });
  return problems;
}

/**
 * The client's settings as its profile makes them: a `fapi2` client must push its authorization
 * requests (§5.3.2.2, "shall reject authorization requests sent without [RFC9126]"), and its codes
 * live at most {@link fapi2MaxCodeLifetimeSeconds} (§5.3.2.1; a longer configured lifetime is
 * shortened, as the default of 300 s would be).
 */
export function applyClientProfile(client: ClientEntry): ClientEntry {
  if (client.profile !== 'fapi2') return client;
  return {
    ...client,
    requirePushedAuthorizationRequests: true,
    authorizationCodeLifetime: Math.min(client.authorizationCodeLifetime, fapi2MaxCodeLifetimeSeconds),
  };
}
