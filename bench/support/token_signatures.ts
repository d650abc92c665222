import { compactVerify, createLocalJWKSet, type JSONWebKeySet } from 'jose';

/** Verifies a compact JWS against the server's published keys; rejects when it does not. */
export type KeySet = ReturnType<typeof createLocalJWKSet>;

/**
 * The keys a resource server would trust: discovery's `jwks_uri`, fetched once per contender.
 * The load checks only look at the shape of the answers (the load generator cannot verify
 * signatures at these rates); the depth checks before and after every run verify them with this.
 */
export async function publishedKeySet(baseUrl: string): Promise<KeySet> {
  const discovery = (await fetchJson(`${baseUrl}/.well-known/openid-configuration`)) as { jwks_uri?: unknown };
  if (typeof discovery.jwks_uri !== 'string') throw new Error('discovery has no jwks_uri');
  // The issuer may name a public host; the keys are fetched from the server under test.
  const jwksPath = new URL(discovery.jwks_uri).pathname;
  return createLocalJWKSet((await fetchJson(baseUrl + jwksPath)) as JSONWebKeySet);
}

async function fetchJson(url: string): Promise<unknown> {
  const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
  if (response.status !== 200) throw new Error(`GET ${url}: status ${response.status}`);
  return response.json();
}

const signedMembers = ['access_token', 'id_token'] as const;

/**
 * What is wrong with the signatures of the JWTs in a token response (`access_token`,
 * `id_token`), or null when every one verifies against `keys`. Bodies that are not JSON objects
 * or carry no JWT have nothing to verify.
 */
export async function tokenSignatureProblem(body: string, keys: KeySet): Promise<string | null> {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return null;
  }
  if (typeof json !== 'object' || json === null) return null;
  for (const member of signedMembers) {
    const token = (json as Record<string, unknown>)[member];
    if (typeof token !== 'string' || token.split('.').length !== 3) continue;
    try {
      await compactVerify(token, keys);
    } catch (err) {
      return `${member} does not verify against the published JWKS (${err instanceof Error ? err.message : String(err)})`;
    }
  }
  return null;
}
