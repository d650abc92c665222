import { randomUUID } from 'node:crypto';
import type { RegisteredClient } from '../../core/client_model.js';
import type { GrantedScopes } from '../../core/rules/scope_rules.js';
import type { ClaimValue } from '../../core/validator_api.js';

/** Claims a client or an extension grant can never set: they carry the token's meaning. */
export const protectedClaims: ReadonlySet<string> = new Set([
  'iss',
  'sub',
  'aud',
  'exp',
  'nbf',
  'iat',
  'jti',
  'client_id',
  'scope',
  'auth_time',
  'idp',
  'amr',
  'act',
  'cnf',
  'typ',
  'azp',
  'nonce',
  'at_hash',
  'c_hash',
  'sid',
]);

const clientClaimsCache = new WeakMap<RegisteredClient, Readonly<Record<string, string | string[]>>>();

/** The client's configured claims as JWT members; repeated types become arrays. */
export function clientClaimsOf(client: RegisteredClient): Readonly<Record<string, string | string[]>> {
  let claims = clientClaimsCache.get(client);
  if (claims === undefined) {
    const built: Record<string, string | string[]> = {};
    for (const { type, value } of client.config.claims) {
      if (protectedClaims.has(type)) continue;
      const existing = built[type];
      if (existing === undefined) built[type] = value;
      else built[type] = Array.isArray(existing) ? [...existing, value] : [existing, value];
    }
    claims = Object.freeze(built);
    clientClaimsCache.set(client, claims);
  }
  return claims;
}

export interface AccessTokenInput {
  issuer: string;
  client: RegisteredClient;
  scopes: GrantedScopes;
  /** Epoch seconds. */
  now: number;
  /** The user's subject; absent for client-only tokens, where `sub` is the client id (RFC 9068 §2.2). */
  subject?: string;
  /** User-grant claims (`auth_time`, `idp`, `amr`, …) and extension-grant claims. */
  claims?: Readonly<Record<string, ClaimValue>>;
  /** The DPoP key thumbprint the token is bound to (RFC 9449 §6.1: `cnf.jkt`). */
  jkt?: string | undefined;
  /** The TLS client certificate's SHA-256 thumbprint the token is bound to (RFC 8705 §3.1: `cnf.x5t#S256`). */
  x5t?: string | undefined;
  /** A `jti` drawn before the token is built (a refresh records it in the store first); else a fresh one. */
  jti?: string | undefined;
}

/** The `exp` of an access token issued at `nowSeconds` to `client`. */
export function accessTokenExp(client: RegisteredClient, nowSeconds: number): number {
  return nowSeconds + client.config.accessTokenLifetime;
}

/**
 * RFC 9068 access-token claims. `aud` names the API resources of the granted scopes; with none,
 * the static `{issuer}/resources` audience IdentityServer uses, so `aud` is never missing.
 */
export function buildAccessTokenClaims(input: AccessTokenInput): Record<string, unknown> {
  const { issuer, client, scopes, now } = input;
  const audiences = scopes.audiences;
  const payload: Record<string, unknown> = {
    iss: issuer,
    nbf: now,
    iat: now,
    exp: accessTokenExp(client, now),
    aud: audiences.length === 1 ? audiences[0] : audiences.length === 0 ? `${issuer}/resources` : audiences,
    scope: scopes.scope,
    client_id: client.clientId,
    sub: input.subject ?? client.clientId,
    jti: input.jti ?? randomUUID(),
  };
  if (input.claims !== undefined) {
    for (const name in input.claims) {
      if (
        name === 'sub' ||
        name === 'iss' ||
        name === 'aud' ||
        name === 'exp' ||
        name === 'nbf' ||
        name === 'iat' ||
        name === 'jti' ||
        name === 'client_id' ||
        name === 'scope'
      )
        continue;
      payload[name] = input.claims[name];
    }
  }
  // IdentityServer semantics: client claims go into client-only tokens, and into user tokens
  // only with alwaysSendClientClaims.
  if (input.subject === undefined || client.config.alwaysSendClientClaims) {
    const clientClaims = clientClaimsOf(client);
    for (const name in clientClaims) if (!(name in payload)) payload[name] = clientClaims[name];
  }
  // Set last: no grant or client claim can replace the binding (`cnf` is a protected claim anyway).
  if (input.jkt !== undefined || input.x5t !== undefined) {
    const cnf: Record<string, string> = {};
    if (input.jkt !== undefined) cnf.jkt = input.jkt;
    if (input.x5t !== undefined) cnf['x5t#S256'] = input.x5t;
    payload.cnf = cnf;
  }
  return payload;
}
