/**
 * Checks that need the whole, schema-valid document: unknown or duplicate names across sections,
 * secrets and redirect URIs a client's grants need, password hash formats.
 */
import { isPasswordHash } from '../../core/crypto/password_hash.js';
import type { UserConfig } from '../../core/worker_config.js';
import type { ConfigProblem } from './config_error.js';
import { builtInGrantTypes } from '../../core/grant_types.js';
import { checkClientProfile } from './client_profiles.js';
import { checkSigningRotation } from './signing_rotation.js';
import { shippedExtensionGrantTypes, type TesseraConfig } from './schema.js';

export function checkCrossReferences(config: TesseraConfig, extraGrantTypes: readonly string[], validatorsFailed = false): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const report = (path: string, message: string): void => {
    problems.push({ path, message });
  };

  // Identity resources and API scopes share one namespace: the `scope` parameter.
  const scopeOwners = new Map<string, string>();
  const registerScope = (name: string, path: string): void => {
    if (name === 'offline_access') {
      report(path, '"offline_access" is built in and cannot be registered');
      return;
    }
    const first = scopeOwners.get(name);
    if (first !== undefined) report(path, `duplicate scope name "${name}" (also ${first})`);
    else scopeOwners.set(name, path);
  };
  config.identityResources.forEach((resource, i) => registerScope(resource.name, `identityResources[${i}].name`));
  const apiScopeNames = new Set<string>();
  config.apiScopes.forEach((scope, i) => {
    registerScope(scope.name, `apiScopes[${i}].name`);
    apiScopeNames.add(scope.name);
  });

  const resourceNames = new Map<string, string>();
  config.apiResources.forEach((resource, i) => {
    const first = resourceNames.get(resource.name);
    if (first !== undefined) report(`apiResources[${i}].name`, `duplicate API resource name "${resource.name}" (also ${first})`);
    else resourceNames.set(resource.name, `apiResources[${i}].name`);
    resource.scopes.forEach((scope, j) => {
      if (!apiScopeNames.has(scope)) report(`apiResources[${i}].scopes[${j}]`, `unknown API scope "${scope}"`);
    });
  });

  const knownGrantTypes = new Set<string>([...builtInGrantTypes, ...shippedExtensionGrantTypes, ...extraGrantTypes]);
  const clientIds = new Map<string, string>();
  config.clients.forEach((client, i) => {
    const at = `clients[${i}]`;
    const first = clientIds.get(client.clientId);
    if (first !== undefined) report(`${at}.clientId`, `duplicate client id "${client.clientId}" (also ${first})`);
    else clientIds.set(client.clientId, `${at}.clientId`);

    // A client with keys authenticates with private_key_jwt only (docs/endpoints.md, "Client authentication").
    const hasKeys = client.jwks !== undefined || client.jwksUri !== undefined;
    if (client.jwks !== undefined && client.jwksUri !== undefined) report(`${at}.jwksUri`, 'must not be set together with jwks');
    if (hasKeys && client.clientSecrets.length > 0) {
      report(`${at}.clientSecrets`, 'must be empty for a client with jwks or jwksUri (it authenticates with private_key_jwt only)');
    }
    if (hasKeys && !client.requireClientSecret) {
      report(`${at}.requireClientSecret`, 'must not be false for a client with jwks or jwksUri (it is a confidential client)');
    }
    const tlsMethod = client.tokenEndpointAuthMethod;
    if (tlsMethod !== undefined) checkTlsClientAuth(config, client, at, report);
    else if (tlsNames(client).length > 0)
      report(`${at}.tokenEndpointAuthMethod`, 'must be "tls_client_auth" for a client with tlsClientAuth* names');
    if (tlsMethod === 'tls_client_auth' && (hasKeys || client.clientSecrets.length > 0)) {
      report(
        `${at}.tokenEndpointAuthMethod`,
        'tls_client_auth: the client must have no clientSecrets, jwks or jwksUri (it authenticates with its certificate only)',
      );
    }
    // A fapi2 client without keys or a TLS method gets the profile's own problem (client_profiles.ts).
    if (
      tlsMethod === undefined &&
      !hasKeys &&
      client.requireClientSecret &&
      client.clientSecrets.length === 0 &&
      client.profile === undefined
    ) {
      report(`${at}.clientSecrets`, 'must list at least one secret when requireClientSecret is true');
    }
    client.allowedGrantTypes.forEach((grantType, j) => {
      if (knownGrantTypes.has(grantType)) return;
      // The validator that would register it may be the one that did not load: say so, or this
      // line reads as the cause.
      const hint = validatorsFailed ? ' (or its validator did not load: see the validator problems above)' : '';
      report(`${at}.allowedGrantTypes[${j}]`, `unknown grant type "${grantType}"${hint}`);
    });
    if (client.allowedGrantTypes.includes('authorization_code') && client.redirectUris.length === 0) {
      report(`${at}.redirectUris`, 'must list at least one redirect URI for the authorization_code grant');
    }
    client.allowedScopes.forEach((scope, j) => {
      if (scope === 'offline_access') {
        if (!client.allowOfflineAccess) report(`${at}.allowedScopes[${j}]`, '"offline_access" requires allowOfflineAccess: true');
      } else if (!scopeOwners.has(scope)) {
        report(`${at}.allowedScopes[${j}]`, `unknown scope "${scope}"`);
      }
    });
    client.audiences.forEach((audience, j) => {
      if (!resourceNames.has(audience)) report(`${at}.audiences[${j}]`, `unknown API resource "${audience}"`);
    });
    problems.push(...checkClientProfile(client, at));
    // Only a sliding lifetime is bounded by the absolute one; with `absolute` expiration the sliding
    // value (perhaps its default) is never read, so it contradicts nothing (IdentityServer agrees).
    if (client.refreshTokenExpiration === 'sliding' && client.slidingRefreshTokenLifetime > client.absoluteRefreshTokenLifetime) {
      report(
        `${at}.slidingRefreshTokenLifetime`,
        `must not exceed absoluteRefreshTokenLifetime (${client.slidingRefreshTokenLifetime} > ${client.absoluteRefreshTokenLifetime})`,
      );
    }
  });

  // A username is unique within its tenant and identity provider.
  const usernames = new Map<string, string>();
  config.users.forEach((user, i) => {
    const key = JSON.stringify([user.username, user.tenant ?? null, user.idp]);
    const first = usernames.get(key);
    if (first !== undefined) report(`users[${i}].username`, `duplicate user "${user.username}"${describeRealm(user)} (also ${first})`);
    else usernames.set(key, `users[${i}].username`);
    if (!isPasswordHash(user.passwordHash)) {
      report(`users[${i}].passwordHash`, 'must be an argon2id or scrypt PHC string as printed by "tessera hash-password"');
    }
  });

  problems.push(...checkSigningRotation(config));
  // The event stream needs a Redis to go to: its own URL, or the store's when that is one Redis.
  if (config.events.redisStream !== undefined && config.events.redisStream.url === undefined && config.store.type !== 'redis') {
    report('events.redisStream.url', 'is required unless the store is a single Redis ("type": "redis")');
  }
  problems.push(...checkProcesses(config, config.processes));
  // The admin API writes clients to the store: a gateway that does not read them there would
  // accept changes it never applies (docs/operations.md, "Admin API").
  if ((config.admin.tokenFile !== undefined || config.admin.tokenScope !== undefined) && !config.clientRegistry.store) {
    report('admin', 'needs clientRegistry.store: true (the admin API keeps its clients in the store)');
  }
  // A scope no client can be given would authenticate no one.
  if (config.admin.tokenScope !== undefined && !apiScopeNames.has(config.admin.tokenScope)) {
    report('admin.tokenScope', `unknown API scope "${config.admin.tokenScope}"`);
  }
  // Registered clients live in the store like the admin API's (docs/endpoints.md, "Dynamic client registration").
  if (config.dynamicClientRegistration.enabled && !config.clientRegistry.store) {
    report('dynamicClientRegistration', 'needs clientRegistry.store: true (registered clients are kept in the store)');
  }
  if (config.dynamicClientRegistration.enabled) {
    // The policy offers only what a client may have: checked here, not at each registration.
    const { policy } = config.dynamicClientRegistration;
    policy.grantTypes.forEach((grantType, j) => {
      if (!knownGrantTypes.has(grantType)) report(`dynamicClientRegistration.policy.grantTypes[${j}]`, `unknown grant type "${grantType}"`);
    });
    policy.scopes.forEach((scope, j) => {
      if (scope !== 'offline_access' && !scopeOwners.has(scope))
        report(`dynamicClientRegistration.policy.scopes[${j}]`, `unknown scope "${scope}"`);
    });
  }
  return problems;
}

/**
 * Several front-end processes on one port (docs/operations.md, "Several processes") share only
 * what the store shares: on the memory store each would keep its own codes, refresh tokens and
 * counters, and a client would see them come and go with the process its connection reached.
 * `tessera start --processes N` checks its own N with this too.
 */
export function checkProcesses(config: Pick<TesseraConfig, 'store' | 'management'>, processes: number): ConfigProblem[] {
  if (processes <= 1) return [];
  const problems: ConfigProblem[] = [];
  if (config.store.type === 'memory') {
    problems.push({
      path: 'processes',
      message: `${processes} processes need the Redis store: on the memory store each process would have its own state (codes, refresh tokens, throttles)`,
    });
  }
  // Each process's management listener takes management.port + its index (0 picks free ports).
  const { port } = config.management;
  if (port !== 0 && !config.management.onPublicPort && port + processes - 1 > 65535) {
    problems.push({
      path: 'management.port',
      message: `with ${processes} processes the ports ${port}..${port + processes - 1} must all be below 65536`,
    });
  }
  return problems;
}

function describeRealm(user: UserConfig): string {
  const parts = [...(user.tenant === undefined ? [] : [`tenant "${user.tenant}"`]), `idp "${user.idp}"`];
  return ` in ${parts.join(', ')}`;
}

/** The names a `tls_client_auth` client's certificate may be matched by (RFC 8705 §2.1.2). */
export const tlsClientAuthNames = [
  'tlsClientAuthSubjectDn',
  'tlsClientAuthSanDns',
  'tlsClientAuthSanUri',
  'tlsClientAuthSanIp',
  'tlsClientAuthSanEmail',
] as const;

/** The `tlsClientAuth*` names a client set: its certificate must carry exactly one (RFC 8705 §2.1.2). */
function tlsNames(client: TesseraConfig['clients'][number]): string[] {
  return tlsClientAuthNames.filter((name) => client[name] !== undefined);
}

/** RFC 8705 §2: what each mutual TLS method needs of the client and of `mtls`. */
function checkTlsClientAuth(
  config: TesseraConfig,
  client: TesseraConfig['clients'][number],
  at: string,
  report: (path: string, message: string) => void,
): void {
  const names = tlsNames(client);
  if (client.tokenEndpointAuthMethod === 'tls_client_auth') {
    if (names.length !== 1)
      report(
        `${at}.tokenEndpointAuthMethod`,
        'tls_client_auth needs exactly one of tlsClientAuthSubjectDn, tlsClientAuthSanDns, tlsClientAuthSanUri, tlsClientAuthSanIp, tlsClientAuthSanEmail',
      );
    if (config.mtls.caFile === undefined)
      report('mtls.caFile', `is required by ${at} (tls_client_auth certificates are checked against it)`);
    return;
  }
  if (names.length > 0) report(`${at}.${names[0]}`, 'is for tls_client_auth only');
  if (client.jwks === undefined)
    report(`${at}.jwks`, "self_signed_tls_client_auth needs jwks, the keys of the client's certificates (RFC 8705 §2.2)");
  if (client.jwksUri !== undefined) report(`${at}.jwksUri`, 'is not used by self_signed_tls_client_auth: list the keys in jwks');
}
