/**
 * Generated confidential clients for the `scale` bench: `count` client_credentials clients, each
 * with its own secret stored as Base64(SHA-256(secret)), as config/demo.json and
 * docs/configuration.md ("Client secrets") store them.
 */
import { basicAuthorization } from '../scenarios/requests.js';
import { sha256Secret } from '../support/bench_config.js';

/** The id and secret of generated client `index`. */
export function scaleClient(index: number): { clientId: string; secret: string } {
  return { clientId: `scale-client-${index}`, secret: `scale-secret-${index}` };
}

/** `count` client entries for `clients` in a config (docs/configuration.md, "Clients"). */
export function scaleClientConfigs(count: number): Record<string, unknown>[] {
  const clients: Record<string, unknown>[] = [];
  for (let index = 0; index < count; index++) {
    const { clientId, secret } = scaleClient(index);
    clients.push({
      clientId,
      clientSecrets: [{ value: sha256Secret(secret) }],
      allowedGrantTypes: ['client_credentials'],
      allowedScopes: ['api1'],
      accessTokenLifetime: 3600,
    });
  }
  return clients;
}

/**
 * The `Authorization: Basic` headers of `picked` clients out of `count`, spread evenly over all of
 * them (client 0, count/picked, 2·count/picked, …), so that a load cycling over them touches the
 * whole client map rather than its first entries.
 */
export function spreadAuthorizations(count: number, picked: number): string[] {
  if (!Number.isInteger(count) || !Number.isInteger(picked) || count < 1 || picked < 1 || picked > count)
    throw new RangeError(`cannot pick ${picked} of ${count} clients`);
  const headers: string[] = [];
  for (let i = 0; i < picked; i++) {
    const { clientId, secret } = scaleClient(Math.floor((i * count) / picked));
    headers.push(basicAuthorization(clientId, secret));
  }
  return headers;
}
