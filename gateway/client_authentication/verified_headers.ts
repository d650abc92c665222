import type { StoredSecret } from '../../core/client_model.js';

const rememberMs = 60_000;

/**
 * Headers remembered at most: past it the memory is emptied and starts again, so a stream of
 * distinct valid headers costs a full check each, never unbounded memory
 * (docs/decisions/0004-remember-verified-basic-headers.md).
 */
export const maxRememberedHeaders = 10_000;

/**
 * `Authorization: Basic` headers that proved a secret recently, with what they authenticated
 * (a client, an API resource) and until when (docs/endpoints.md, "Client authentication"). A header
 * is remembered only once its secret matched, so a hit reveals nothing its sender did not already
 * know; it spares repeat callers the Base64, the form decoding and the SHA-256 of the secret.
 */
export class VerifiedHeaders<T> {
  private readonly entries = new Map<string, { readonly value: T; readonly until: number }>();

  constructor(private readonly now: () => number) {}

  /** What `header` authenticated, while it is remembered. */
  get(header: string): T | undefined {
    const entry = this.entries.get(header);
    return entry !== undefined && entry.until > this.now() ? entry.value : undefined;
  }

  /** Remembers `header` for 60 s, never past the expiry of any unexpired secret of `secrets`. */
  remember(header: string, value: T, secrets: readonly StoredSecret[]): void {
    if (this.entries.size >= maxRememberedHeaders) this.entries.clear();
    const now = this.now();
    let until = now + rememberMs;
    for (const secret of secrets) if (secret.expiresAt > now && secret.expiresAt < until) until = secret.expiresAt;
    this.entries.set(header, { value, until });
  }
}
