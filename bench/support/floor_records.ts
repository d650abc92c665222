/**
 * The one-call redemptions of the floors (issue 33: `redeemChain`, `redeemRecord`) as the bench's
 * requests make them: the record each finds, built as the bench seeds it
 * (support/seed_grant.mjs, with the scenario's own client, user, scopes and claims, packed by the
 * store's own codec), and the call the grant makes on it (workers/grants/refresh_token.ts,
 * authorization_code.ts, device_code.ts): the same checks, which the record passes (a refresh, a
 * code) or fails where the request's does (a device code not approved yet), the same derived
 * refresh token and the same `~at` companion. The bare ioredis loop (store_command_cost.ts) and
 * the bridge loop (threads/bridge_loop.ts) both make these calls, so each measures the success
 * path the steady state takes, not a refusal of a record the scripts cannot read.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { issuedAccessTokenRecord } from '../../core/records/family_revocation.js';
import { newFamilyHandle, newFamilyId, newRefreshHandle } from '../../core/records/refresh_token_handle.js';
import { offlineAccessScope } from '../../core/rules/scope_rules.js';
import { packRecordWithHeader } from '../../core/store/record_codec.js';
import type { ChainChecks, ChainRedeemPolicy, CompanionRecord, DerivedRecord, RedeemChecks, StoreKey } from '../../core/store/store.js';
import { codeScopes, deviceScopes, refreshScopes, userClaims } from '../scenarios/kinds.js';
import { benchClients, benchUser } from './bench_config.js';

/** How long the floor's records live (as the seeded ones, far longer than a loop). */
const lifetimeMs = 3_600_000;
/** The scopes the bench's `ro`, `web` and `tv` clients may be granted (support/bench_config.ts): the checks' `scopes`. */
const grantableScopes = ['openid', 'api1', 'offline_access'] as const;
/** The gateway's defaults the bench clients keep (gateway/config/schema.ts). */
const defaults = { accessTokenLifetimeS: 3600, graceMs: 5_000, rotationsPerMinute: 60, absoluteRefreshLifetimeMs: 2_592_000_000 };
/** A retry value's nonce (workers/tokens/refresh_token_retry.ts, `{ v: 2, n }`). */
const retryNonceBytes = 16;

/** A record as the bench seeds it, under its key, for `ttlMs`. */
export interface SeededRecord {
  readonly key: StoreKey;
  readonly value: Record<string, unknown>;
  readonly ttlMs: number;
}

/** A {@link Store.redeemChain} call (refresh_token) and the record it finds. */
export interface ChainRedemptionCall {
  readonly kind: 'chain';
  readonly found: SeededRecord;
  readonly successorKey: StoreKey;
  readonly companions: readonly CompanionRecord<unknown>[];
  readonly checks: ChainChecks;
  readonly chain: ChainRedeemPolicy<unknown>;
}

/** A {@link Store.redeemRecord} call (authorization_code, device_code) and the record it finds. */
export interface RecordRedemptionCall {
  readonly kind: 'record';
  readonly found: SeededRecord;
  readonly checks: RedeemChecks;
  readonly derived: DerivedRecord | undefined;
  readonly companions: readonly CompanionRecord<unknown>[];
}

export type RedemptionCall = ChainRedemptionCall | RecordRedemptionCall;

/** The records of the floor: a refresh token, an authorization code, a device code no one approved yet. */
export type FloorRecord = 'refreshToken' | 'code' | 'pendingDeviceCode';

/** The access token's `~at` entry the grant writes in the same step, its `jti` drawn first. */
function issuedEntry(family: string, now: number): CompanionRecord<unknown>[] {
  const issued = issuedAccessTokenRecord(family, { jti: randomUUID(), exp: Math.floor(now / 1000) + defaults.accessTokenLifetimeS }, now);
  return issued === undefined ? [] : [issued];
}

/** The refresh token a redemption derives from its code (workers/grants/token_issuance.ts, `derivedRefreshToken`), for a confidential client. */
function derivedRefreshToken(clientId: string, family: string, now: number): DerivedRecord {
  const absoluteExpiresAt = now + defaults.absoluteRefreshLifetimeMs;
  return {
    key: newRefreshHandle(family).key,
    ttlMs: absoluteExpiresAt - now,
    whenScope: offlineAccessScope,
    set: { v: 1, clientId, family, createdAt: now, absoluteExpiresAt, expiresAt: absoluteExpiresAt },
    copy: ['subject', 'scopes', 'resources', 'claims'],
    nest: { openId: ['sid'] },
  };
}

/** A refresh of `ro.client` (oneTimeOnly, absolute expiry, 5 s grace): a live token passes, is rotated. */
function refreshRedemption(now: number): ChainRedemptionCall {
  const family = newFamilyId();
  const handle = newRefreshHandle(family);
  const clientId = benchClients.ro.clientId;
  const value = {
    v: 1,
    clientId,
    subject: benchUser.subject,
    scopes: refreshScopes,
    claims: userClaims(),
    family,
    createdAt: now,
    absoluteExpiresAt: now + lifetimeMs,
    expiresAt: now + lifetimeMs,
  };
  return {
    kind: 'chain',
    found: { key: handle.key, value, ttlMs: lifetimeMs },
    successorKey: newRefreshHandle(family).key,
    companions: issuedEntry(family, now),
    checks: { clientId, now, jkt: undefined, x5t: undefined, scopes: grantableScopes, slidingUntil: undefined },
    chain: {
      limit: defaults.rotationsPerMinute,
      windowMs: 60_000,
      graceMs: defaults.graceMs,
      retry: { v: 2, n: randomBytes(retryNonceBytes) },
    },
  };
}

/** A redemption of a `web` code with PKCE S256: it passes, is consumed, its refresh token derived. */
function codeRedemption(now: number): RecordRedemptionCall {
  const family = newFamilyId();
  const handle = newFamilyHandle('code', family);
  const client = benchClients.web;
  const codeChallenge = randomBytes(32).toString('base64url');
  const value = {
    v: 1,
    clientId: client.clientId,
    redirectUri: client.redirectUri,
    subject: benchUser.subject,
    scopes: codeScopes,
    claims: userClaims(),
    nonce: randomBytes(12).toString('base64url'),
    sid: randomBytes(16).toString('base64url'),
    codeChallenge,
    family,
    createdAt: now,
  };
  return {
    kind: 'record',
    found: { key: handle.key, value, ttlMs: lifetimeMs },
    checks: {
      equal: { clientId: client.clientId, redirectUri: client.redirectUri, codeChallenge },
      bound: { dpopJkt: undefined },
      scopes: grantableScopes,
    },
    derived: derivedRefreshToken(client.clientId, family, now),
    companions: issuedEntry(family, now),
  };
}

/** A `tv` poll of a device code no user has approved: it fails the `status` check and comes back unchecked. */
function pendingDevicePoll(now: number): RecordRedemptionCall {
  const family = newFamilyId();
  const handle = newFamilyHandle('dc', family);
  const clientId = benchClients.tv.clientId;
  const value = { v: 1, clientId, scopes: deviceScopes, expiresAt: now + lifetimeMs, status: 'pending', family };
  return {
    kind: 'record',
    found: { key: handle.key, value, ttlMs: lifetimeMs },
    checks: { equal: { clientId, status: 'approved' }, later: { expiresAt: now }, scopes: grantableScopes },
    derived: derivedRefreshToken(clientId, family, now),
    companions: issuedEntry(family, now),
  };
}

/** A fresh call of `record`'s redemption, with a record of its own (a family of its own). */
export function redemptionCall(record: FloorRecord, now: number = Date.now()): RedemptionCall {
  switch (record) {
    case 'refreshToken':
      return refreshRedemption(now);
    case 'code':
      return codeRedemption(now);
    case 'pendingDeviceCode':
      return pendingDevicePoll(now);
  }
}

/** The bytes the found record takes in Redis (the store's header byte included), as the floor declares them. */
export function storedBytes(record: FloorRecord): number {
  return packRecordWithHeader(redemptionCall(record).found.value, 1).length;
}
