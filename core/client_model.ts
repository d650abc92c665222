import type { ClientConfig, SecretConfig } from './worker_config.js';

/** A configured client secret, decoded once at boot. */
export interface StoredSecret {
  /** The 32 bytes of SHA-256(secret). */
  readonly hash: Buffer;
  /** Epoch ms after which the secret is refused; Infinity when it never expires. */
  readonly expiresAt: number;
}

/**
 * A client as both threads use it: the config plus the sets the hot path looks things up in,
 * built once at boot.
 */
export interface RegisteredClient {
  readonly config: Readonly<ClientConfig>;
  readonly clientId: string;
  readonly enabled: boolean;
  readonly requireSecret: boolean;
  readonly secrets: readonly StoredSecret[];
  readonly grantTypes: ReadonlySet<string>;
  readonly scopes: ReadonlySet<string>;
  readonly redirectUris: ReadonlySet<string>;
  /**
   * A client kept in the store (the client registry, docs/architecture.md "Clients in the
   * store"): its config as the task item carries it to the worker, without its secrets. Absent
   * for a client of the config file, which every worker has from its boot data.
   */
  readonly stored?: Readonly<ClientConfig>;
}

export function registerClient(config: Readonly<ClientConfig>): RegisteredClient {
  return {
    config,
    clientId: config.clientId,
    enabled: config.enabled,
    requireSecret: config.requireClientSecret,
    secrets: decodeSecrets(config.clientSecrets),
    grantTypes: new Set(config.allowedGrantTypes),
    scopes: new Set(config.allowedScopes),
    redirectUris: new Set(config.redirectUris),
  };
}

/** A client from the store: registered as a configured one, and marked for the task item. */
export function registerStoredClient(config: Readonly<ClientConfig>): RegisteredClient {
  return { ...registerClient(config), stored: { ...config, clientSecrets: [] } };
}

export function registerClients(clients: readonly Readonly<ClientConfig>[]): ReadonlyMap<string, RegisteredClient> {
  const map = new Map<string, RegisteredClient>();
  for (const client of clients) map.set(client.clientId, registerClient(client));
  return map;
}

/** Configured secrets (clients' and API resources') as the comparison needs them. */
export function decodeSecrets(secrets: readonly SecretConfig[]): StoredSecret[] {
  return secrets.map((s) => ({
    hash: Buffer.from(s.value, 'base64'),
    expiresAt: s.expiration === undefined ? Number.POSITIVE_INFINITY : Date.parse(s.expiration),
  }));
}
