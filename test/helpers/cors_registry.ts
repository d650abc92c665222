import pino from 'pino';
import type { Store } from '../../core/store/store.js';
import { ClientRegistry } from '../../gateway/client_registry/client_registry.js';

/** A client registry on `store` for the CORS index tests: small caches, no polling within a test, silent. */
export function corsTestRegistry(store: Store): ClientRegistry {
  return new ClientRegistry(store, {
    cacheSize: 10,
    negativeCacheSize: 10,
    cacheTtlMs: 60_000,
    pollIntervalMs: 60_000,
    logger: pino({ level: 'silent' }),
  });
}

/** Changes a stored client's `allowedCorsOrigins` through the registry, as the admin API does. */
export function setCorsOrigins(registry: ClientRegistry, clientId: string, allowed: readonly string[]) {
  return registry.change(clientId, (current) => ({ config: { ...current.config, allowedCorsOrigins: [...allowed] } }));
}
