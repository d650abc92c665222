import type { ClientConfig } from '../../core/worker_config.js';
import type { ClaimValue } from '../../core/validator_api.js';

/** What the store keeps for one refresh token (docs/storage.md, keyed by SHA-256 of the handle). */
export interface RefreshTokenRecord {
  readonly v: 1;
  readonly clientId: string;
  readonly subject: string;
  /** As first granted, `offline_access` included; a refresh may narrow but never widen it. */
  readonly scopes: readonly string[];
  /**
   * The API resources the grant was bound to by `resource` (RFC 8707 §2.2): a refresh may ask for
   * some of them, never another. Absent (and in records written before it existed): every resource
   * of `scopes`.
   */
  readonly resources?: readonly string[];
  /** Claims re-issued into every access token of the family (`auth_time`, `idp`, `amr`, …). */
  readonly claims: Readonly<Record<string, ClaimValue>>;
  readonly family: string;
  /** Epoch ms of the family's first token. */
  readonly createdAt: number;
  /** Epoch ms after which no token of the family is valid. */
  readonly absoluteExpiresAt: number;
  /** Epoch ms after which this token is not valid (sliding expiry, never past the absolute one). */
  readonly expiresAt: number;
  /** Set when the grant issues ID tokens (code, device): refreshes issue new ones (OIDC Core §12.2). */
  readonly openId?: { readonly sid?: string | undefined };
  /** A public client's DPoP key thumbprint (RFC 9449 §5): every refresh must present a proof by that key. */
  readonly jkt?: string;
  /** A public client's TLS certificate thumbprint (RFC 8705 §4): every refresh must come with that certificate. */
  readonly x5t?: string;
}

/** When a token written now expires, per the client's `refreshTokenExpiration`. */
export function refreshExpiry(
  client: Pick<ClientConfig, 'refreshTokenExpiration' | 'slidingRefreshTokenLifetime'>,
  absoluteExpiresAt: number,
  nowMs: number,
): number {
  if (client.refreshTokenExpiration === 'absolute') return absoluteExpiresAt;
  return Math.min(absoluteExpiresAt, nowMs + client.slidingRefreshTokenLifetime * 1000);
}
