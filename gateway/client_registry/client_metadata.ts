/**
 * RFC 7591 client metadata and Tessera's client config, both ways: a registration request's
 * metadata checked against the registration policy (docs/configuration.md,
 * `dynamicClientRegistration.policy`) and turned into the client JSON the admin API takes (then
 * checked as that is, `checkClientDocument`), and a registered client's metadata as the answers
 * show it (RFC 7591 §3.2.1, RFC 7592 §3).
 */
import type { TesseraConfig } from '../config/schema.js';

export type RegistrationPolicy = TesseraConfig['dynamicClientRegistration']['policy'];
export type RegistrationAuthMethod = RegistrationPolicy['tokenEndpointAuthMethods'][number];

/** The metadata Tessera keeps and answers with, as registered (RFC 7591 §2), normalised. */
export interface ClientMetadata {
  readonly redirect_uris: readonly string[];
  readonly token_endpoint_auth_method: RegistrationAuthMethod;
  readonly grant_types: readonly string[];
  readonly response_types: readonly string[];
  /** Space-separated, as RFC 7591 §2 writes it. */
  readonly scope: string;
  readonly client_name?: string;
  /** OpenID Connect RP-Initiated Logout 1.0 §3.1. */
  readonly post_logout_redirect_uris?: readonly string[];
  readonly client_uri?: string;
  readonly logo_uri?: string;
  readonly tos_uri?: string;
  readonly policy_uri?: string;
  readonly contacts?: readonly string[];
  readonly software_id?: string;
  readonly software_version?: string;
  /** RFC 7591 §2: `private_key_jwt` and `self_signed_tls_client_auth` keys, by value… */
  readonly jwks?: { readonly keys: readonly Record<string, unknown>[] };
  /** …or by reference (`private_key_jwt` only). */
  readonly jwks_uri?: string;
  /** RFC 8705 §2.1.2: the one name a `tls_client_auth` client's certificate carries. */
  readonly tls_client_auth_subject_dn?: string;
  readonly tls_client_auth_san_dns?: string;
  readonly tls_client_auth_san_uri?: string;
  readonly tls_client_auth_san_ip?: string;
  readonly tls_client_auth_san_email?: string;
}

/** RFC 8705 §2.1.2 metadata and the client config fields they become. */
const tlsNameFields = [
  ['tls_client_auth_subject_dn', 'tlsClientAuthSubjectDn'],
  ['tls_client_auth_san_dns', 'tlsClientAuthSanDns'],
  ['tls_client_auth_san_uri', 'tlsClientAuthSanUri'],
  ['tls_client_auth_san_ip', 'tlsClientAuthSanIp'],
  ['tls_client_auth_san_email', 'tlsClientAuthSanEmail'],
] as const;

/** Whether a client registered with `method` authenticates with a client secret. */
export function usesClientSecret(method: RegistrationAuthMethod): boolean {
  return method === 'client_secret_basic' || method === 'client_secret_post';
}

/** RFC 7591 §3.2.2: which of the two errors, and why (the `error_description`). */
export type MetadataOutcome =
  | { readonly ok: true; readonly metadata: ClientMetadata }
  | { readonly ok: false; readonly error: 'invalid_client_metadata' | 'invalid_redirect_uri'; readonly description: string };

/** Human-readable strings and URLs kept as given (RFC 7591 §2); anything else unknown is ignored (§2). */
const stringFields = ['client_name', 'client_uri', 'logo_uri', 'tos_uri', 'policy_uri', 'software_id', 'software_version'] as const;

/** Fields the server provisions: a request that sets them is refused rather than half-believed. */
const serverFields = ['registration_access_token', 'registration_client_uri', 'client_id_issued_at', 'client_secret_expires_at'];

/**
 * `body`, a registration (or RFC 7592 §2.2 update) request, as metadata within `policy`; the first
 * problem found otherwise. Defaults of RFC 7591 §2: `client_secret_basic`, `["authorization_code"]`,
 * `["code"]`; no `scope`: every scope of the policy.
 */
export function checkClientMetadata(body: unknown, policy: RegistrationPolicy): MetadataOutcome {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return invalid('the body must be a JSON object');
  const given = body as Record<string, unknown>;
  for (const field of serverFields) if (given[field] !== undefined) return invalid(`${field} is set by the server`);

  const method = given.token_endpoint_auth_method ?? 'client_secret_basic';
  if (typeof method !== 'string' || !(policy.tokenEndpointAuthMethods as readonly string[]).includes(method)) {
    return invalid(`token_endpoint_auth_method must be one of ${policy.tokenEndpointAuthMethods.join(', ')}`);
  }
  const keys = keyMetadata(given, method as RegistrationAuthMethod);
  if (typeof keys === 'string') return invalid(keys);
  const grantTypes = stringArray(given.grant_types, ['authorization_code']);
  if (grantTypes === undefined || grantTypes.length === 0) return invalid('grant_types must be a non-empty array of strings');
  const outside = grantTypes.find((g) => !policy.grantTypes.includes(g));
  if (outside !== undefined) return invalid(`grant type ${outside} is not allowed`);
  const responseTypes = stringArray(given.response_types, grantTypes.includes('authorization_code') ? ['code'] : []);
  if (responseTypes === undefined || responseTypes.some((r) => r !== 'code')) return invalid('response_types may only be ["code"]');
  // RFC 7591 §2.1: the response type and grant type of the code flow go together.
  if (responseTypes.includes('code') !== grantTypes.includes('authorization_code')) {
    return invalid('response_types "code" and grant_types "authorization_code" go together (RFC 7591 §2.1)');
  }

  if (given.scope !== undefined && typeof given.scope !== 'string') return invalid('scope must be a string');
  const scopes = given.scope === undefined ? [...policy.scopes] : given.scope.split(' ').filter((s) => s.length > 0);
  const unknownScope = scopes.find((s) => !policy.scopes.includes(s));
  if (unknownScope !== undefined) return invalid(`scope ${unknownScope} is not allowed`);

  const redirectUris = stringArray(given.redirect_uris, []);
  if (redirectUris === undefined) return badRedirect('redirect_uris must be an array of strings');
  // RFC 7591 §2: redirect-based flows need their redirect URIs registered.
  if (grantTypes.includes('authorization_code') && redirectUris.length === 0)
    return badRedirect('redirect_uris is required for authorization_code');
  const postLogout = stringArray(given.post_logout_redirect_uris, []);
  if (postLogout === undefined) return badRedirect('post_logout_redirect_uris must be an array of strings');
  for (const uri of [...redirectUris, ...postLogout]) {
    const problem = redirectUriProblem(uri, policy.redirectUriSchemes);
    if (problem !== undefined) return badRedirect(problem);
  }

  const metadata: Record<string, unknown> = {
    redirect_uris: redirectUris,
    token_endpoint_auth_method: method,
    grant_types: grantTypes,
    response_types: responseTypes,
    scope: scopes.join(' '),
  };
  if (postLogout.length > 0) metadata.post_logout_redirect_uris = postLogout;
  Object.assign(metadata, keys);
  for (const field of stringFields) {
    const value = given[field];
    if (value === undefined) continue;
    if (typeof value !== 'string') return invalid(`${field} must be a string`);
    metadata[field] = value;
  }
  if (given.contacts !== undefined) {
    const contacts = stringArray(given.contacts, []);
    if (contacts === undefined) return invalid('contacts must be an array of strings');
    metadata.contacts = contacts;
  }
  return { ok: true, metadata: metadata as unknown as ClientMetadata };
}

/**
 * The client JSON of the admin API for `metadata` (checked again with `checkClientDocument`):
 * a public client for `none`, the secret given otherwise (both secret methods are accepted at
 * the token endpoint: a store-kept client has no `tokenEndpointAuthMethod`).
 */
export function clientDocumentOf(clientId: string, metadata: ClientMetadata, secrets: readonly unknown[]): Record<string, unknown> {
  const scopes = metadata.scope.split(' ').filter((s) => s.length > 0);
  return {
    clientId,
    ...(metadata.client_name === undefined ? {} : { clientName: metadata.client_name }),
    // A key or certificate client is confidential too; it simply has no secret.
    requireClientSecret: metadata.token_endpoint_auth_method !== 'none',
    clientSecrets: usesClientSecret(metadata.token_endpoint_auth_method) ? secrets : [],
    ...(metadata.jwks === undefined ? {} : { jwks: metadata.jwks }),
    ...(metadata.jwks_uri === undefined ? {} : { jwksUri: metadata.jwks_uri }),
    ...(metadata.token_endpoint_auth_method === 'tls_client_auth' || metadata.token_endpoint_auth_method === 'self_signed_tls_client_auth'
      ? { tokenEndpointAuthMethod: metadata.token_endpoint_auth_method }
      : {}),
    ...Object.fromEntries(tlsNameFields.flatMap(([name, field]) => (metadata[name] === undefined ? [] : [[field, metadata[name]]]))),
    allowedGrantTypes: metadata.grant_types,
    allowedScopes: scopes,
    // Tessera issues refresh tokens for offline_access only (docs/endpoints.md).
    allowOfflineAccess: scopes.includes('offline_access'),
    redirectUris: metadata.redirect_uris,
    postLogoutRedirectUris: metadata.post_logout_redirect_uris ?? [],
  };
}

/**
 * The key and certificate metadata `method` needs, and no other (RFC 7591 §2: `jwks` and
 * `jwks_uri` never both; RFC 8705 §2.1.2: one certificate name for `tls_client_auth`); a
 * description of the problem otherwise. The keys' own checks are the client schema's.
 */
function keyMetadata(given: Record<string, unknown>, method: RegistrationAuthMethod): Record<string, unknown> | string {
  const found: Record<string, unknown> = {};
  const { jwks, jwks_uri: jwksUri } = given;
  if (jwks !== undefined) {
    const keys = (jwks as { keys?: unknown } | null)?.keys;
    if (typeof jwks !== 'object' || !Array.isArray(keys)) return 'jwks must be a JWK Set: {"keys": [...]}';
    found.jwks = jwks;
  }
  if (jwksUri !== undefined) {
    if (typeof jwksUri !== 'string') return 'jwks_uri must be a string';
    found.jwks_uri = jwksUri;
  }
  for (const [name] of tlsNameFields) {
    const value = given[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') return `${name} must be a string`;
    found[name] = value;
  }
  const names = tlsNameFields.filter(([name]) => found[name] !== undefined).length;
  if (found.jwks !== undefined && found.jwks_uri !== undefined) return 'jwks and jwks_uri must not both be given (RFC 7591 §2)';
  if (method === 'private_key_jwt') {
    if (found.jwks === undefined && found.jwks_uri === undefined) return 'private_key_jwt needs jwks or jwks_uri';
  } else if (method === 'self_signed_tls_client_auth') {
    if (found.jwks === undefined) return 'self_signed_tls_client_auth needs jwks (the certificate keys, RFC 8705 §2.2)';
  } else if (found.jwks !== undefined || found.jwks_uri !== undefined) {
    return `jwks and jwks_uri go with private_key_jwt or self_signed_tls_client_auth, not ${method}`;
  }
  if (method === 'tls_client_auth' ? names !== 1 : names > 0) {
    return 'tls_client_auth needs exactly one tls_client_auth_* name (RFC 8705 §2.1.2), and no other method takes one';
  }
  return found;
}

/** RFC 6749 §3.1.2: absolute, no fragment; and a scheme the policy allows. */
function redirectUriProblem(uri: string, schemes: readonly string[]): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `${uri} is not an absolute URI`;
  }
  if (uri.includes('#')) return `${uri} must not contain a fragment (RFC 6749 §3.1.2)`;
  const scheme = url.protocol.slice(0, -1);
  if (!schemes.includes(scheme)) return `${uri}: the scheme must be one of ${schemes.join(', ')}`;
  return undefined;
}

function stringArray(value: unknown, fallback: readonly string[]): string[] | undefined {
  if (value === undefined) return [...fallback];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) return undefined;
  return [...new Set(value as string[])];
}

function invalid(description: string): MetadataOutcome {
  return { ok: false, error: 'invalid_client_metadata', description };
}

function badRedirect(description: string): MetadataOutcome {
  return { ok: false, error: 'invalid_redirect_uri', description };
}
