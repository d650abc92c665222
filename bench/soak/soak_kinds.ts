/**
 * What the soak sends: the `mixed` scenario's kinds as the steady load, and a wider mix in each
 * burst, every request of it valid so that its answer can be checked (bench/README.md, "Soak and
 * bursts"). Device authorization is the one kind here that no other scenario sends.
 */
import type { RequestKind, ServerAccess } from '../scenarios/scenario.js';
import { authorizationCodeKind, clientCredentialsKind, introspectionKind, refreshTokenKind } from '../scenarios/kinds.js';
import { parseJson } from '../scenarios/checks.js';
import { formPost } from '../scenarios/requests.js';
import { addClients, addIntrospectionSecret, benchClients } from '../support/bench_config.js';
import { mixed } from '../scenarios/mixed.js';

/** Each burst kind's share of a burst, in percent. */
export const burstShares = {
  client_credentials: 40,
  refresh_token: 25,
  device_authorization: 15,
  authorization_code: 10,
  introspection: 10,
} as const;

/** The config the soak's gateway runs: the mixed scenario's clients, and the device client `tv`. */
export function configureSoak(config: Record<string, unknown>): void {
  addClients(config, 'ro', 'web', 'tv');
  addIntrospectionSecret(config);
  // Every burst asks for hundreds of device codes from one address: the endpoint's rate
  // (docs/configuration.md, "throttling") is not what the soak measures.
  config.throttling = { deviceAuthorization: { maxRequests: 10_000_000, windowSeconds: 60 } };
}

/**
 * Device authorization by a public client (RFC 8628 §3.1, §3.2): `tv` asks for a device code
 * with `client_id` only, and gets a device code, a user code and where to send the user.
 */
export function deviceAuthorizationKind(weight = 1): RequestKind {
  return {
    name: 'device_authorization',
    weight,
    request: formPost('/connect/deviceauthorization', { client_id: benchClients.tv.clientId, scope: 'openid api1' }),
    expect: { status: 200, bodyPrefix: '{"device_code":"', contains: ['"user_code":"', '"verification_uri":"'] },
    verify: (status, body) => {
      const json = parseJson(body);
      if (status !== 200 || json === null) return `status ${status}: ${body.slice(0, 200)}`;
      for (const member of ['device_code', 'user_code', 'verification_uri'])
        if (typeof json[member] !== 'string') return `no ${member} in ${body.slice(0, 200)}`;
      if (typeof json.expires_in !== 'number') return 'no expires_in';
      return null;
    },
  };
}

/** The steady load: the `mixed` scenario's kinds and shares. */
export function steadyKinds(server: ServerAccess): Promise<RequestKind[]> {
  if (mixed.workload === undefined) throw new Error('the mixed scenario has no workload');
  return mixed.workload(server);
}

/** A burst's kinds, weighted by {@link burstShares}. */
export async function burstKinds(server: ServerAccess): Promise<RequestKind[]> {
  return [
    clientCredentialsKind(burstShares.client_credentials),
    refreshTokenKind(burstShares.refresh_token),
    deviceAuthorizationKind(burstShares.device_authorization),
    authorizationCodeKind(burstShares.authorization_code),
    await introspectionKind(server, burstShares.introspection),
  ];
}

/** How many of `size` requests each kind gets: its share, rounded, the rest to the first. */
export function splitBurst(size: number, weights: readonly number[]): number[] {
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  const counts = weights.map((weight) => Math.floor((size * weight) / total));
  const rest = size - counts.reduce((sum, count) => sum + count, 0);
  if (counts.length > 0) counts[0] = (counts[0] as number) + rest;
  return counts;
}
