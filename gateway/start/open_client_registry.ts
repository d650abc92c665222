import { ClientRegistry } from '../client_registry/client_registry.js';
import { ApiResourceRegistry } from '../client_registry/api_resource_registry.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { GatewayState } from './gateway_state.js';

/**
 * With `clientRegistry.store`: the registry of store-kept clients, its version read once and then
 * polled (docs/configuration.md, `clientRegistry`). Before the routes, which look clients up in it.
 */
export async function openClientRegistry(state: GatewayState, metrics: GatewayMetrics): Promise<void> {
  const { config, logger } = state;
  const options = config.clientRegistry;
  if (!options.store) return;
  const registry = new ClientRegistry(state.storage.store, {
    cacheSize: options.cacheSize,
    negativeCacheSize: options.negativeCacheSize,
    cacheTtlMs: options.cacheTtlSeconds * 1000,
    pollIntervalMs: options.pollIntervalMs,
    logger: logger.child({ component: 'client-registry' }),
  });
  state.clientRegistry = registry;
  metrics.watchClientRegistry(registry);
  await registry.start();
  // Store-kept API resources: read whole at start, then as their version changes.
  const apiResources = new ApiResourceRegistry(state.storage.store, {
    pollIntervalMs: options.pollIntervalMs,
    cell: state.apiResourceCell,
    logger: logger.child({ component: 'api-resources' }),
  });
  state.apiResources = apiResources;
  await apiResources.start();
}
