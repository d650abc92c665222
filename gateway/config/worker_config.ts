import type { WorkerConfig } from '../../core/worker_config.js';
import type { TesseraConfig } from './schema.js';

/**
 * The part of a validated config that each worker thread receives in its boot data: what the
 * workers read (core/worker_config.ts), and nothing else of the document.
 */
export function workerConfigOf(config: TesseraConfig): WorkerConfig {
  return {
    issuer: config.issuer,
    store: config.store,
    clients: config.clients,
    users: config.users,
    identityResources: config.identityResources,
    apiScopes: config.apiScopes,
    apiResources: config.apiResources,
    throttling: {
      password: config.throttling.password,
      passwordPerUser: config.throttling.passwordPerUser,
      passwordPerAddress: config.throttling.passwordPerAddress,
      introspectionInactive: config.throttling.introspectionInactive,
    },
    validatorTimeoutMs: config.validatorTimeoutMs,
    dpop: config.dpop,
  };
}
