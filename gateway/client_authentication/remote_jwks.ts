import type { Logger } from 'pino';
import type { PublicJwkConfig } from '../../core/worker_config.js';

/** How a client's `jwksUri` is fetched and kept (`clientAssertions` in the config). */
export interface RemoteJwksOptions {
  /** Keys are used this long after a fetch, then fetched again. */
  readonly cacheMs: number;
  /** An unknown `kid` (or a failed fetch) fetches again at most this often. */
  readonly cooldownMs: number;
  /** Time limit of one fetch, body included. */
  readonly timeoutMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
}

/** A JWK Set larger than this is refused: a client's keys fit in a few KiB. */
const maxBodyBytes = 256 * 1024;
const acceptedKeyTypes: ReadonlySet<string> = new Set(['EC', 'RSA', 'OKP']);

/**
 * One client's `jwks_uri` keys (RFC 7591 §2), fetched on the gateway thread without blocking it
 * (an async `fetch` with a time limit), cached for `cacheMs`, fetched again early when an
 * assertion names a `kid` the cache lacks (the client rotated its keys), at most once per
 * `cooldownMs` so that made-up `kid`s cannot make the gateway fetch on every request. A failed
 * fetch yields no keys (the request is answered `invalid_client`) and is not retried before
 * `cooldownMs` either: a client whose URI is down is refused fast, never left waiting. Concurrent
 * requests share one fetch. Stale keys are never used after a failed fetch: a client that removed
 * a compromised key must not have it accepted for longer than `cacheMs`.
 */
export class RemoteJwks {
  private keys: readonly PublicJwkConfig[] = [];
  private fetchedAt = Number.NEGATIVE_INFINITY;
  private attemptedAt = Number.NEGATIVE_INFINITY;
  private failed = false;
  private pending: Promise<void> | undefined;
  private readonly now: () => number;

  constructor(
    private readonly uri: string,
    private readonly clientId: string,
    private readonly options: RemoteJwksOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /**
   * The cached keys that `pick` keeps, synchronously when the cache can answer; a promise when a
   * fetch is needed first. Never rejects.
   */
  select(pick: (keys: readonly PublicJwkConfig[]) => PublicJwkConfig[]): PublicJwkConfig[] | Promise<PublicJwkConfig[]> {
    const now = this.now();
    const fresh = !this.failed && now - this.fetchedAt < this.options.cacheMs;
    const mayFetch = now - this.attemptedAt >= this.options.cooldownMs;
    if (fresh) {
      const picked = pick(this.keys);
      if (picked.length > 0 || !mayFetch) return picked;
    } else if (this.failed && !mayFetch) {
      // Keys merely past `cacheMs` are fetched again at once; a failed URI waits for the cooldown.
      return [];
    }
    return this.refresh().then(() => (this.failed ? [] : pick(this.keys)));
  }

  private refresh(): Promise<void> {
    this.pending ??= this.fetchKeys().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async fetchKeys(): Promise<void> {
    this.attemptedAt = this.now();
    try {
      const keys = await fetchJwks(this.uri, this.options.timeoutMs);
      this.keys = keys;
      this.fetchedAt = this.now();
      this.failed = false;
    } catch (err) {
      this.failed = true;
      this.keys = [];
      // Which client and why; the URI is configuration, not a secret.
      this.options.logger.warn({ clientId: this.clientId, jwksUri: this.uri, reason: describe(err) }, 'could not fetch a client jwksUri');
    }
  }
}

async function fetchJwks(uri: string, timeoutMs: number): Promise<PublicJwkConfig[]> {
  const signal = AbortSignal.timeout(timeoutMs);
  const response = await fetch(uri, { signal, redirect: 'error', headers: { accept: 'application/json' } });
  if (response.status !== 200) {
    await response.body?.cancel();
    throw new Error(`status ${response.status}`);
  }
  const body = await readCapped(response, maxBodyBytes);
  const document: unknown = JSON.parse(body);
  const keys = (document as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new Error('not a JWK Set');
  return keys.filter(isPublicJwk);
}

async function readCapped(response: Response, limit: number): Promise<string> {
  const reader = response.body?.getReader();
  if (reader === undefined) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new Error('JWK Set too large');
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

// Public asymmetric keys only: an `oct` key, or one with private members, is skipped. Whether it
// imports is checked by the worker that verifies with it.
function isPublicJwk(value: unknown): value is PublicJwkConfig {
  if (typeof value !== 'object' || value === null) return false;
  const jwk = value as Record<string, unknown>;
  return typeof jwk.kty === 'string' && acceptedKeyTypes.has(jwk.kty) && jwk.d === undefined && jwk.p === undefined;
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.name === 'TimeoutError' || err.name === 'AbortError' ? 'timeout' : err.message;
  return 'unknown error';
}
