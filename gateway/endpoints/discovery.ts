import type { LoadedConfig } from '../config/load.js';
import type { SigningKeyMaterial } from '../../core/signing_key.js';
import { publicJwk } from '../../core/signing_key.js';
import { clientAssertionAlgorithms } from '../../core/client_assertion.js';
import { dpopSigningAlgorithms } from '../../core/dpop_algorithms.js';
import { ScopeRules } from '../../core/rules/scope_rules.js';
import { supportedIdTokenClaims } from '../../core/id_token_claims.js';
import { endpointPaths } from './endpoint_paths.js';
import type { ApiResourceRegistry } from '../client_registry/api_resource_registry.js';

export const discoveryPath = endpointPaths.discovery;
export const jwksPath = endpointPaths.jwks;

/**
 * Where RFC 8414 §3.1 puts the authorization server metadata: the well-known name inserted
 * between the issuer's host and its path (`https://as.example/tenant` →
 * `/.well-known/oauth-authorization-server/tenant`).
 */
export function authorizationServerMetadataPath(issuer: string): string {
  const path = new URL(issuer).pathname;
  return `${endpointPaths.authorizationServerMetadata}${path === '/' ? '' : path}`;
}

/**
 * `body` (a discovery document) with the store-kept API resources' scopes added to
 * `scopes_supported` (docs/configuration.md, `clientRegistry`), built again only when `body` or
 * the resources change: per request, two comparisons.
 */
export function withStoredScopes(body: () => string, resources: Pick<ApiResourceRegistry, 'generation' | 'resources'>): () => string {
  let base = '';
  let generation = -1;
  let served = '';
  return () => {
    const current = body();
    if (current === base && resources.generation === generation) return served;
    base = current;
    generation = resources.generation;
    const stored = resources.resources().flatMap((r) => r.scopes);
    if (stored.length === 0) {
      served = current;
      return served;
    }
    const document = JSON.parse(current) as { scopes_supported?: string[] };
    const listed = document.scopes_supported ?? [];
    document.scopes_supported = [...listed, ...new Set(stored.filter((s) => !listed.includes(s)))];
    served = JSON.stringify(document);
    return served;
  };
}

/**
 * The discovery document (OIDC Discovery 1.0 §3), which is also the RFC 8414 §2 authorization
 * server metadata: one document, served at both well-known addresses. Built once at start (and
 * again when grants change), then served as a ready string.
 */
export function buildDiscoveryDocument(config: LoadedConfig, grantTypes: readonly string[], keys: readonly SigningKeyMaterial[]): string {
  const issuer = config.issuer;
  const tls = mutualTlsMetadata(config);
  const document = {
    issuer,
    jwks_uri: `${issuer}${jwksPath}`,
    authorization_endpoint: `${issuer}${endpointPaths.authorize}`,
    token_endpoint: `${issuer}${endpointPaths.token}`,
    device_authorization_endpoint: `${issuer}${endpointPaths.deviceAuthorization}`,
    introspection_endpoint: `${issuer}${endpointPaths.introspection}`,
    revocation_endpoint: `${issuer}${endpointPaths.revocation}`,
    userinfo_endpoint: `${issuer}${endpointPaths.userinfo}`,
    end_session_endpoint: `${issuer}${endpointPaths.endSession}`,
    // RFC 8414 §2: only when registration is served (docs/endpoints.md, "Dynamic client registration").
    ...(config.dynamicClientRegistration.enabled ? { registration_endpoint: `${issuer}${endpointPaths.registration}` } : {}),
    grant_types_supported: grantTypes,
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none', ...tls.methods],
    // RFC 8414 §2: the algorithms a private_key_jwt assertion may be signed with (never none or HMAC).
    token_endpoint_auth_signing_alg_values_supported: clientAssertionAlgorithms,
    // API resources authenticate with Basic only; confidential clients as at the token endpoint.
    introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', ...tls.methods],
    introspection_endpoint_auth_signing_alg_values_supported: clientAssertionAlgorithms,
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none', ...tls.methods],
    revocation_endpoint_auth_signing_alg_values_supported: clientAssertionAlgorithms,
    scopes_supported: new ScopeRules(config).supportedScopes(),
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    authorization_response_iss_parameter_supported: true,
    // RFC 9126 §5: pushed authorization requests, required of every client or of some.
    pushed_authorization_request_endpoint: `${issuer}${endpointPaths.pushedAuthorization}`,
    require_pushed_authorization_requests: config.pushedAuthorizationRequests.required,
    // RFC 9101: signed request objects by value, at the authorization endpoint and pushed.
    request_parameter_supported: true,
    request_object_signing_alg_values_supported: clientAssertionAlgorithms,
    // Only a request_uri from the pushed authorization request endpoint is taken: none is
    // fetched by reference (OIDC Discovery §3's meaning, RFC 9101 §5.2). OIDC Discovery §3 makes
    // an absent member true, so it is stated (docs/endpoints.md, "Discovery and JWKS").
    request_uri_parameter_supported: false,
    claims_supported: supportedIdTokenClaims(config),
    prompt_values_supported: ['none', 'login', 'consent'],
    subject_types_supported: ['public'],
    // Every key has the configured algorithm; before store-kept keys are loaded there is none to read it from.
    id_token_signing_alg_values_supported: keys.length > 0 ? [...new Set(keys.map((k) => k.alg))] : [config.signing.algorithm],
    code_challenge_methods_supported: ['S256'],
    dpop_signing_alg_values_supported: dpopSigningAlgorithms,
    ...tls.bound,
  };
  return JSON.stringify(document);
}

/**
 * RFC 8705 §2.3, §3.3: the mutual TLS methods and certificate-bound tokens, stated once some client
 * uses them (the operator set up certificates for it: docs/operations.md, "Mutual TLS"). The same
 * endpoints serve mutual TLS, so there is no `mtls_endpoint_aliases` (§5: clients then use these).
 */
function mutualTlsMetadata(config: LoadedConfig): { methods: string[]; bound: { tls_client_certificate_bound_access_tokens?: true } } {
  const used = config.clients.some((c) => c.tokenEndpointAuthMethod !== undefined || c.tlsClientCertificateBoundAccessTokens);
  if (!used) return { methods: [], bound: {} };
  return { methods: ['tls_client_auth', 'self_signed_tls_client_auth'], bound: { tls_client_certificate_bound_access_tokens: true } };
}

/** The JWKS document: public halves only, every key that is published (RFC 7517 §5, docs/endpoints.md "Discovery and JWKS"). */
export function buildJwksDocument(keys: readonly SigningKeyMaterial[]): string {
  return JSON.stringify({ keys: keys.map(publicJwk) });
}
