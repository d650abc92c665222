/**
 * Revoking a grant's family and the access tokens issued in it: the refresh-token grant's reuse
 * detection, the revocation endpoint (workers) and a user's revocation of a client's grants
 * (gateway/pages/grants_page.ts) all go through here.
 */
import type { CompanionRecord, Store } from '../store/store.js';
import { issuedTokensFamily } from './refresh_token_handle.js';

/** A revoked `jti` lives in the store until the token would have expired (docs/storage.md, "Records"). */
export function revokedJtiKey(jti: string) {
  return { kind: 'jti', id: jti } as const;
}

/** An access token issued within a refresh family, remembered until it expires. */
export interface IssuedAccessToken {
  readonly jti: string;
  /** Epoch seconds. */
  readonly exp: number;
}

/**
 * The record that remembers an access token of a family, so that revoking the family can deny it;
 * `undefined` for a token that has already expired. A rotation writes it as its companion, in the
 * same atomic step (see `Store.rotate`).
 */
export function issuedAccessTokenRecord(
  family: string,
  token: IssuedAccessToken,
  nowMs: number,
): CompanionRecord<IssuedAccessToken> | undefined {
  const ttlMs = token.exp * 1000 - nowMs;
  if (ttlMs <= 0) return undefined;
  return { key: { kind: 'at', id: token.jti, family: issuedTokensFamily(family) }, value: { jti: token.jti, exp: token.exp }, ttlMs };
}

/**
 * Remembers an access token of a family on its own, for issuances that write no rotation. Written
 * before the family's state changes, so a revocation that wins the race still finds it.
 */
export async function recordIssuedAccessToken(store: Store, family: string, token: IssuedAccessToken, nowMs: number): Promise<void> {
  const record = issuedAccessTokenRecord(family, token, nowMs);
  if (record !== undefined) await store.set(record.key, record.value, record.ttlMs);
}

/** Puts a JWT access token on the deny list until it would have expired (RFC 7009 §2, docs/storage.md). */
export async function denyAccessToken(store: Store, token: IssuedAccessToken, nowMs: number): Promise<void> {
  const ttl = token.exp * 1000 - nowMs;
  if (ttl <= 0) return;
  await store.set(revokedJtiKey(token.jti), 1, ttl);
}

/**
 * Revokes a refresh-token family (RFC 9700 §4.14.2): every refresh token in it, and every access
 * token issued from it. The family is marked revoked first, so nothing can join it while its
 * access tokens are listed.
 */
export async function revokeRefreshFamily(store: Store, family: string, retentionMs: number, nowMs: number): Promise<void> {
  await store.revokeFamily(family, retentionMs);
  const issued = await store.familyRecords<IssuedAccessToken>(issuedTokensFamily(family), 'at');
  await Promise.all(issued.map((token) => denyAccessToken(store, token, nowMs)));
}
