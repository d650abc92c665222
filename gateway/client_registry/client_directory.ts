import type { RegisteredClient } from '../../core/client_model.js';
import type { ClientLookup } from '../client_authentication/authenticator.js';
import type { ClientRegistry } from './client_registry.js';

/** Where the pages find a client: the config file's, then the store's (which may be unavailable). */
export interface ClientFinder {
  /**
   * The enabled or disabled client `clientId` names; `undefined` when there is none.
   *
   * @throws StoreUnavailableError when only the store could tell, and it cannot answer.
   */
  find(clientId: string): Promise<RegisteredClient | undefined>;
}

/**
 * The clients client authentication sees: the config file's first, then the store-kept ones the
 * registry has cached (docs/configuration.md, `clientRegistry`). Built with each route set, so a
 * reload swaps the config's clients while the registry and its cache stay.
 */
export class ClientDirectory implements ClientLookup, ClientFinder {
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

  /**
   * The client from the config file, the registry's cache, or one store read (shared with
   * concurrent ones, and cached either way). The pages' way in (docs/architecture.md, "Clients in
   * the store"): they await it where the API endpoints' authentication step does the same.
   */
  async find(clientId: string): Promise<RegisteredClient | undefined> {
    const configured = this.configClients.get(clientId);
    if (configured !== undefined || this.registry === undefined) return configured;
    const cached = this.registry.cached(clientId);
    if (cached !== undefined) return cached ?? undefined;
    return await this.registry.lookup(clientId);
  }
}
