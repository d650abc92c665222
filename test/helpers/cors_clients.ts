/**
 * Store-kept clients that list CORS origins (docs/endpoints.md, "CORS"), created through the admin
 * API so that the registry writes their origin index, and the raw requests a browser page sends
 * from an origin: a simple token request and a preflight. For the burst and lifecycle tests of the
 * origin lookup (gateway/http/cors.ts, gateway/client_registry/cors_origins.ts).
 */
import type { BurstAnswer } from './burst.js';
import { formPost } from './release_at_once.js';

/** Origin `i` of store-kept client `client`. */
export function corsOrigin(client: number, i: number): string {
  return `https://app-${client}-${i}.example`;
}

/** An origin no client lists. */
export function unknownOrigin(i: number): string {
  return `https://unknown-${i}.example`;
}

/**
 * Creates clients `cors-0` … `cors-{count - 1}` through the admin API at `managementUrl`, each
 * listing `originsEach` origins ({@link corsOrigin}); resolves every origin listed.
 */
export async function createCorsClients(managementUrl: string, adminToken: string, count: number, originsEach: number): Promise<string[]> {
  const origins: string[] = [];
  for (let client = 0; client < count; client += 1) {
    const allowedCorsOrigins = Array.from({ length: originsEach }, (_, i) => corsOrigin(client, i));
    const res = await fetch(`${managementUrl}/admin/clients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        clientId: `cors-${client}`,
        allowedGrantTypes: ['client_credentials'],
        allowedScopes: ['api1'],
        allowedCorsOrigins,
      }),
    });
    await res.arrayBuffer();
    if (res.status !== 201) throw new Error(`creating cors-${client}: ${res.status}`);
    origins.push(...allowedCorsOrigins);
  }
  return origins;
}

/**
 * A page's token request from `origin` (a simple request: no preflight): client_credentials by
 * the config file's public client `public-cc`, which needs no store, so that its answer is `200`
 * whether the store answers or not and only its CORS headers depend on the origin lookup.
 */
export function corsTokenRequest(origin: string): Buffer {
  return formPost('/connect/token', { grant_type: 'client_credentials', client_id: 'public-cc', scope: 'api2' }, undefined, {
    Origin: origin,
  });
}

/** A preflight from `origin` for a POST to the token endpoint. */
export function corsPreflight(origin: string): Buffer {
  return Buffer.from(
    `OPTIONS /connect/token HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: ${origin}\r\n` +
      'Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: authorization, dpop\r\n\r\n',
  );
}

/**
 * What is wrong with `answer` to a request from `origin` ({@link corsTokenRequest}, or
 * {@link corsPreflight} when `preflight`), when the origin is `allowed` or not; `undefined` when
 * nothing is. Allowed: `200` (`204`) with `Access-Control-Allow-Origin` naming the origin;
 * otherwise `200` (`403`) without it; `Vary: Origin` on every one.
 */
export function corsProblem(answer: BurstAnswer | undefined, origin: string, preflight: boolean, allowed: boolean): string | undefined {
  if (answer === undefined) return `${origin}: no answer`;
  const status = preflight ? (allowed ? 204 : 403) : 200;
  const allowOrigin = answer.headers.get('access-control-allow-origin');
  const problems = [
    answer.status === status ? '' : `status ${answer.status}, not ${status}`,
    allowOrigin === (allowed ? origin : undefined) ? '' : `Access-Control-Allow-Origin ${String(allowOrigin)}`,
    answer.headers.get('vary') === 'Origin' ? '' : `Vary ${String(answer.headers.get('vary'))}`,
  ].filter((problem) => problem !== '');
  return problems.length === 0 ? undefined : `${preflight ? 'preflight' : 'token request'} from ${origin}: ${problems.join(', ')}`;
}
