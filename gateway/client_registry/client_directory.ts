import type { RegisteredClient } from '../../core/client_model.js';
import type { ClientLookup } from '../client_authentication/authenticator.js';
import type { ClientRegistry } from './client_registry.js';

/**
 * The clients client authentication sees: the config file's first, then the store-kept ones the
 * registry has cached (docs/configuration.md, `clientRegistry`). Built with each route set, so a
 * reload swaps the config's clients while the registry and its cache stay.
 */
export class ClientDirectory implements ClientLookup {
  constructor(
    readonly configClients: ReadonlyMap<string, RegisteredClient>,
    readonly registry: ClientRegistry | undefined,
  ) {}

  get(clientId: string): RegisteredClient | undefined {
    return this.configClients.get(clientId) ?? this.registry?.cached(clientId) ?? undefined;
  }

  /** `clientId` when it must be looked up in the store before authentication can decide. */
  toLookUp(clientId: string | undefined): string | undefined {
    if (clientId === undefined || this.registry === undefined || this.configClients.has(clientId)) return undefined;
    return this.registry.cached(clientId) === undefined ? clientId : undefined;
  }
}
