/**
 * Records written straight into a server's store before the load, for requests that cannot be
 * replayed: refresh tokens (one use each with rotation), authorization codes (one use), and
 * pending device codes (polled at most once per interval).
 *
 * - Tessera: the bench-only grant module `seed_grant.mjs`, which writes through the worker's own
 *   store with the server's handle code (`core/records/refresh_token_handle.ts`).
 * - node-oidc-provider: its own models (`Grant`, `RefreshToken`) saved through its adapter, on
 *   an IPC request to `peers/oidc_provider_process.ts`.
 */
import type { ClaimValue } from '../../core/validator_api.js';
import { basicAuthorization } from '../scenarios/requests.js';

export type SeedRequest =
  | {
      type: 'refresh_token';
      count: number;
      clientId: string;
      subject: string;
      scopes: readonly string[];
      claims: Readonly<Record<string, ClaimValue>>;
      lifetimeS: number;
    }
  | {
      type: 'authorization_code';
      count: number;
      clientId: string;
      redirectUri: string;
      subject: string;
      scopes: readonly string[];
      claims: Readonly<Record<string, ClaimValue>>;
      nonce?: string;
      sid?: string;
      lifetimeS: number;
    }
  | { type: 'device_code'; count: number; clientId: string; scopes: readonly string[]; lifetimeS: number };

/**
 * What the load needs to redeem one record: `{ refresh_token }`, `{ code, code_verifier }` or
 * `{ device_code }`.
 */
export type SeededItem = Readonly<Record<string, string>>;

/** The grant type of `seed_grant.mjs`, and the client the bench config lets use it. */
export const seedGrantType = 'urn:tessera:bench:seed';
export const seederClient = { clientId: 'bench-seeder', secret: 'bench-seeder-secret' } as const;

/** Items per seeding request, and requests in flight (two per worker thread keeps both busy). */
const chunk = 2000;
const inFlight = 4;

/** Seeds Tessera's store through its bench seed grant. */
export async function seedTessera(baseUrl: string, request: SeedRequest): Promise<SeededItem[]> {
  const sizes: number[] = [];
  for (let left = request.count; left > 0; left -= chunk) sizes.push(Math.min(chunk, left));
  const results: SeededItem[][] = new Array<SeededItem[]>(sizes.length);
  let next = 0;
  const authorization = basicAuthorization(seederClient.clientId, seederClient.secret);
  const worker = async (): Promise<void> => {
    while (next < sizes.length) {
      const index = next++;
      const body = new URLSearchParams({ grant_type: seedGrantType, seed: JSON.stringify({ ...request, count: sizes[index] }) });
      const response = await fetch(`${baseUrl}/connect/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: authorization },
        body: body.toString(),
        signal: AbortSignal.timeout(60_000),
      });
      const text = await response.text();
      if (response.status !== 200) throw new Error(`seeding ${request.type}: status ${response.status}: ${text.slice(0, 200)}`);
      const items = (JSON.parse(text) as { items?: SeededItem[] }).items;
      if (!Array.isArray(items) || items.length !== sizes[index]) throw new Error(`seeding ${request.type}: the answer has no items`);
      results[index] = items;
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, sizes.length) }, worker));
  return results.flat();
}
