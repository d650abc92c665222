import type { RegisteredClient } from '../../core/client_model.js';
import { keyFitsAlgorithm, type ClientAssertionAlgorithm } from '../../core/client_assertion.js';
import type { PublicJwkConfig } from '../../core/worker_config.js';
import { RemoteJwks, type RemoteJwksOptions } from './remote_jwks.js';

/** At most this many candidate keys go to the worker: each one it tries is a signature check. */
const maxCandidates = 4;
/**
 * Store-kept clients' `jwksUri` caches kept at once; past it the least recently created goes (and
 * is fetched again when its client comes back). Bounded as the client registry's cache is.
 */
const maxStoredRemotes = 10_000;

/**
 * The public keys each `private_key_jwt` client verifies with: its inline `jwks`, or its
 * `jwksUri` (gateway/client_authentication/remote_jwks.ts). Picks the keys that may have signed
 * an assertion: the header's `kid` when it names one, and always a key whose `kty`, `crv`,
 * `alg` and `use` suit the header's `alg` (RFC 8725 §3.1: the key decides the algorithm family,
 * never the token alone).
 */
export class ClientKeys {
  private readonly remote = new Map<string, RemoteJwks>();
  /**
   * Store-kept clients' (docs/configuration.md, `clientRegistry`), made at their first assertion
   * and keyed by client id and URI: a client whose `jwksUri` changes through the admin API gets a
   * new cache, while one that did not change keeps its fetched keys across the registry's cache
   * invalidations.
   */
  private readonly storedRemote = new Map<string, RemoteJwks>();

  constructor(
    clients: ReadonlyMap<string, RegisteredClient>,
    private readonly options: RemoteJwksOptions,
  ) {
    for (const client of clients.values()) {
      const uri = client.config.jwksUri;
      if (uri !== undefined) this.remote.set(client.clientId, new RemoteJwks(uri, client.clientId, options));
    }
  }

  /**
   * Whether the client authenticates with `private_key_jwt` (and with nothing else); a
   * `self_signed_tls_client_auth` client's `jwks` are its certificates' keys instead (RFC 8705 §2.2).
   */
  static usesKeys(client: RegisteredClient): boolean {
    return client.config.tokenEndpointAuthMethod === undefined && (client.config.jwks !== undefined || client.config.jwksUri !== undefined);
  }

  /** The candidate keys; synchronous unless a `jwksUri` must be fetched first. Never rejects. */
  candidates(
    client: RegisteredClient,
    alg: ClientAssertionAlgorithm,
    kid: string | undefined,
  ): PublicJwkConfig[] | Promise<PublicJwkConfig[]> {
    const pick = (keys: readonly PublicJwkConfig[]): PublicJwkConfig[] => pickKeys(keys, alg, kid);
    const inline = client.config.jwks;
    if (inline !== undefined) return pick(inline.keys);
    if (client.stored === undefined) return this.remote.get(client.clientId)?.select(pick) ?? [];
    return this.storedRemoteOf(client)?.select(pick) ?? [];
  }

  private storedRemoteOf(client: RegisteredClient): RemoteJwks | undefined {
    const uri = client.config.jwksUri;
    if (uri === undefined) return undefined;
    const key = `${client.clientId}\n${uri}`;
    let remote = this.storedRemote.get(key);
    if (remote === undefined) {
      remote = new RemoteJwks(uri, client.clientId, this.options);
      this.storedRemote.set(key, remote);
      if (this.storedRemote.size > maxStoredRemotes) this.storedRemote.delete(this.storedRemote.keys().next().value as string);
    }
    return remote;
  }
}

function pickKeys(keys: readonly PublicJwkConfig[], alg: ClientAssertionAlgorithm, kid: string | undefined): PublicJwkConfig[] {
  const picked: PublicJwkConfig[] = [];
  for (const key of keys) {
    if (kid !== undefined && key.kid !== kid) continue;
    if (!keyFitsAlgorithm(key, alg)) continue;
    picked.push(key);
    if (picked.length === maxCandidates) break;
  }
  return picked;
}
