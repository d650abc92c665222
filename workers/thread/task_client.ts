import { registerStoredClient, type RegisteredClient } from '../../core/client_model.js';
import type { ClientConfig } from '../../core/worker_config.js';
import type { BootedWorker } from './boot.js';

/**
 * The request's client: a store-kept one from the config its task item carries (registered per
 * request: a few sets, no store call), a config file's from the thread's boot data
 * (docs/architecture.md, "Clients in the store").
 */
export function clientOf(worker: BootedWorker, clientId: string, stored: ClientConfig | undefined): RegisteredClient | undefined {
  if (stored === undefined) return worker.services.clients.get(clientId);
  return stored.clientId === clientId ? registerStoredClient(stored) : undefined;
}
