/**
 * Store-kept clients written straight into a test's redis-server with the registry's own key and
 * record (`storedClientKey`, `storedClientRecord`), as the admin API writes them, but thousands
 * at once (pipelined on one connection): for the load tests of the registry's request path.
 */
import { RedisStore } from '../../core/store/redis_store.js';
import type { ClientConfig } from '../../core/worker_config.js';
import { storedClientKey, storedClientRecord, storedClientTtlMs } from '../../gateway/client_registry/client_registry.js';
import { clientSchema } from '../../gateway/config/schema.js';
import { callbackUri } from './authorize_flow.js';
import { sha256Secret } from './test_gateway.js';

/** Every seeded client's secret. */
export const storedSecret = 'stored-secret';

/** A store-kept confidential client: client_credentials for api1 and the code flow (PAR) with `callbackUri`. */
export function storedClientDocument(clientId: string): Record<string, unknown> {
  return {
    clientId,
    clientSecrets: [{ value: sha256Secret(storedSecret) }],
    allowedGrantTypes: ['client_credentials', 'authorization_code'],
    allowedScopes: ['openid', 'api1'],
    redirectUris: [callbackUri],
  };
}

/** `stored-0` … `stored-{count - 1}`. */
export function storedClientIds(count: number, prefix = 'stored'): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
}

/** Writes one client per id (the config file's schema checks each) into the store at `url`, `keyPrefix`. */
export async function seedStoredClients(url: string, keyPrefix: string, ids: readonly string[]): Promise<void> {
  const store = new RedisStore({ url, keyPrefix, commandTimeoutMs: 10_000 });
  try {
    const now = Date.now();
    await Promise.all(
      ids.map((id) => {
        const config = clientSchema.parse(storedClientDocument(id)) as ClientConfig;
        return store.set(storedClientKey(id), storedClientRecord(config, now), storedClientTtlMs);
      }),
    );
  } finally {
    await store.close();
  }
}
