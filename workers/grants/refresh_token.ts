import { OAuthError, OAuthErrors } from '../../core/oauth_errors.js';
import { newRefreshHandle, parseRefreshHandle, type FamilyHandle } from '../../core/records/refresh_token_handle.js';
import { refreshExpiry, type RefreshTokenRecord } from '../tokens/refresh_token_record.js';
import { openRetryRecord, retriableSuccessor, type RetryRecord, type RetryRecordV2 } from '../tokens/refresh_token_retry.js';
import { issuedAccessTokenRecord, recordIssuedAccessToken } from '../../core/records/family_revocation.js';
import { randomUUID } from 'node:crypto';
import {
  FamilyRevokedError,
  isStoreUnavailable,
  type ChainChecks,
  type ChainLookup,
  type ChainRedemption,
  type ChainRotation,
  type CompanionRecord,
  type Store,
  type StoreKey,
} from '../../core/store/store.js';
import type { GrantHandler, GrantRequest, GrantServices, TokenResponse } from './grant_handler.js';
import { refuseOutcome, type SingleUseItem } from './redeem_once.js';
import { narrowStoredGrant } from '../../core/rules/scope_narrowing.js';
import { userPolicy } from '../../core/rules/scope_rules.js';
import { accessTokenExp } from '../tokens/access_token.js';
import type { RegisteredClient } from '../../core/client_model.js';
import type { TaskFacts } from '../../wire/task_facts.js';
import { profiledGrant, signAccessToken, signIdToken, tokenResponse } from './token_issuance.js';

const invalidGrant = (): OAuthError => new OAuthError(OAuthErrors.invalidRefreshToken);

/**
 * RFC 6749 §6 with rotation and reuse detection (RFC 9700 §4.14.2). `oneTimeOnly` tokens are
 * replaced in one atomic store operation: of any number of concurrent refreshes exactly one
 * rotates, and a retired token presented again revokes its whole family, access tokens included,
 * unless it comes within the client's grace window while its successor is still unused: then it
 * is a retry of a rotation whose answer was lost, and gets that same successor
 * (docs/storage.md, "Refresh grace window").
 */
export const refreshTokenGrant: GrantHandler = {
  grantType: 'refresh_token',
  async handle(request, services) {
    const presented = request.params.refresh_token;
    if (presented === undefined) throw new OAuthError(OAuthErrors.missingRefreshToken);
    const handle = parseRefreshHandle(presented);
    if (handle === undefined) throw invalidGrant();
    const { store } = services;
    const client = request.client;
    const now = services.now();
    const item = refreshTokenItem(handle, client.clientId, request.facts);

    if (inOneTrip(request, services)) return refreshInOneTrip(request, services, handle, item, now);
    const record = await store.get<RefreshTokenRecord>(handle.key);
    // Gone or retired; a retired one presented again revokes its family, unless it is a retry.
    if (record === null) return retiredToken(request, services, handle, item);
    return refreshRecord(request, services, handle, item, record, now);
  },
};

/**
 * A refresh whose every check the store can make on the record it holds: a `oneTimeOnly` token,
 * no `scope` or `resource` parameter to narrow by, and no profile service to ask (a validator call
 * no script can make). Then the record is checked, rotated (or found retired) in one store call,
 * and the tokens are signed after it (docs/storage.md, "One round trip per redemption").
 */
function inOneTrip(request: GrantRequest, services: GrantServices): boolean {
  const { client, params } = request;
  return (
    client.config.refreshTokenUsage === 'oneTimeOnly' &&
    services.profiles === undefined &&
    params.resource === undefined &&
    (params.scope === undefined || params.scope.split(' ').every((s) => s.length === 0))
  );
}

/**
 * {@link Store.redeemChain}: the checks of {@link refreshRecord} (client, expiry, key binding, the
 * stored scopes still grantable to the client) made by the store, the rotation with the access
 * token's `~at` entry (its `jti` drawn before it is signed) in the same step. A record the checks
 * do not pass is decided as before, from the record the call returned.
 */
async function refreshInOneTrip(
  request: GrantRequest,
  services: GrantServices,
  handle: FamilyHandle,
  item: SingleUseItem<RefreshTokenRecord>,
  now: number,
): Promise<TokenResponse> {
  const { store } = services;
  const client = request.client;
  const graceMs = client.config.refreshTokenReuseGraceSeconds * 1000;
  const { successor, retry } = successorOf(handle, client, graceMs);
  const jti = randomUUID();
  const issued = issuedAccessTokenRecord(handle.family, { jti, exp: accessTokenExp(client, Math.floor(now / 1000)) }, now);
  const checks: ChainChecks = {
    clientId: client.clientId,
    now,
    jkt: request.jkt,
    x5t: request.x5t,
    scopes: services.scopes.grantable(client, userPolicy),
    slidingUntil: client.config.refreshTokenExpiration === 'absolute' ? undefined : now + client.config.slidingRefreshTokenLifetime * 1000,
  };
  const { limit, windowMs } = chainLimits(client, undefined, now);
  let found: ChainRedemption<RefreshTokenRecord, RetryRecord>;
  try {
    found = await store.redeemChain<RefreshTokenRecord, RetryRecord>(
      handle.key,
      successor.key,
      issued === undefined ? [] : [issued],
      checks,
      {
        limit,
        windowMs,
        graceMs,
        ...(retry === undefined ? {} : { retry }),
      },
    );
  } catch (err) {
    // As in refreshRecord: a rotation whose answer was late may have happened. Then its old
    // token is the chain's last retired one and the lookup answers its successor, whose grant is
    // the retired record's; the access token it recorded is this jti. In one call, like the
    // two-step path's check: a second one (a read of the successor) would lose the answer to a
    // store that stalls again in between, and the client's retry after the window would be reuse.
    if (isStoreUnavailable(err)) {
      const late = await appliedLateRecord(store, handle, graceMs, client);
      if (late !== undefined && late.successorId === successor.key.id)
        return rotatedResponse(request, services, late.successor, successor, now, jti);
    }
    throw err;
  }
  switch (found.status) {
    case 'consumed':
      return rotatedResponse(request, services, found.value, successor, now, jti);
    case 'unchecked':
      return refreshRecord(request, services, handle, item, found.value, now);
    case 'limited':
      throw rotationsLimited(found.retryAfterMs);
    default:
      return retiredToken(request, services, handle, item, found);
  }
}

/** The answer to a rotation the store checked and applied: the tokens of the retired record's grant. */
async function rotatedResponse(
  request: GrantRequest,
  services: GrantServices,
  record: RefreshTokenRecord,
  successor: FamilyHandle,
  now: number,
  jti: string,
): Promise<TokenResponse> {
  const grant = await grantOfRecord(request, services, record);
  const accessToken = signAccessToken(request, services, grant, now, jti);
  // OIDC Core §12.2: same sub, aud and auth_time; no nonce.
  const idToken = signIdToken(request, services, grant, record.openId, accessToken, now);
  return tokenResponse(request, accessToken, grant.scopes.scope, successor.handle, idToken);
}

/** The successor's handle: derived from the old one within a grace window (its retry value beside it), else drawn. */
function successorOf(handle: FamilyHandle, client: RegisteredClient, graceMs: number): { successor: FamilyHandle; retry?: RetryRecordV2 } {
  if (graceMs <= 0) return { successor: newRefreshHandle(handle.family) };
  const retriable = retriableSuccessor(handle, client.clientId, graceMs);
  return { successor: retriable.successor, retry: retriable.retry.value };
}

/** The refresh of a record read from the store: every check here, then the rotation. */
async function refreshRecord(
  request: GrantRequest,
  services: GrantServices,
  handle: FamilyHandle,
  item: SingleUseItem<RefreshTokenRecord>,
  record: RefreshTokenRecord,
  now: number,
): Promise<TokenResponse> {
  const { store } = services;
  const client = request.client;
  const presented = request.params.refresh_token as string;
  // Bound to its client; another client's attempt leaves it untouched.
  if (record.clientId !== client.clientId) throw invalidGrant();
  if (record.expiresAt <= now || record.absoluteExpiresAt <= now) throw invalidGrant();
  const grant = await grantOfRecord(request, services, record);
  const accessToken = signAccessToken(request, services, grant, now);
  // OIDC Core §12.2: same sub, aud and auth_time; no nonce.
  const idToken = signIdToken(request, services, grant, record.openId, accessToken, now);
  const expiresAt = refreshExpiry(client.config, record.absoluteExpiresAt, now);

  if (client.config.refreshTokenUsage === 'reUse') {
    // Before the sliding expiry moves, so a family revocation racing this refresh finds it.
    await recordIssuedAccessToken(store, record.family, accessToken, now);
    if (expiresAt !== record.expiresAt) {
      try {
        await store.set(handle.key, { ...record, expiresAt }, expiresAt - now);
      } catch (err) {
        if (err instanceof FamilyRevokedError) throw invalidGrant();
        throw err;
      }
    }
    return tokenResponse(request, accessToken, grant.scopes.scope, presented, idToken);
  }

  // Written in the rotation's own atomic step: the access token, so that a family revocation
  // either comes first and refuses the rotation or comes after and finds the token; and the
  // retry value, so that a client that never gets this answer can still have the successor.
  const companions: CompanionRecord<unknown>[] = [];
  const issued = issuedAccessTokenRecord(record.family, accessToken, now);
  if (issued !== undefined) companions.push(issued);
  const graceMs = client.config.refreshTokenReuseGraceSeconds * 1000;
  const { successor, retry } = successorOf(handle, client, graceMs);
  let outcome: ChainRotation<RefreshTokenRecord>;
  try {
    outcome = await store.rotateChain<RefreshTokenRecord, RefreshTokenRecord, RetryRecordV2>(
      handle.key,
      successor.key,
      { ...record, expiresAt },
      expiresAt - now,
      companions,
      { ...chainLimits(client, record, now), ...(retry === undefined ? {} : { retry }) },
    );
  } catch (err) {
    // A rotation whose answer was late may still have happened: then the successor exists and
    // is this client's, and answering 503 would lose it (the retry would count as reuse).
    if (isStoreUnavailable(err) && (await appliedLate(store, successor.key))) {
      return tokenResponse(request, accessToken, grant.scopes.scope, successor.handle, idToken);
    }
    throw err;
  }
  if (outcome.status === 'limited') throw rotationsLimited(outcome.retryAfterMs);
  if (outcome.status === 'consumed') return tokenResponse(request, accessToken, grant.scopes.scope, successor.handle, idToken);
  // A concurrent refresh of the same token rotated it first: this one is a retry too.
  if (outcome.status === 'replayed') return retiredToken(request, services, handle, item);
  throw invalidGrant();
}

/**
 * The rate limit and lifetime of a family's chain state (docs/storage.md, "Refresh-token
 * chains"): `refreshTokenRotationsPerMinute` issuances (rotations and grace-window retries) per
 * minute, and the state kept as long as any token of the family could live.
 */
function chainLimits(client: RegisteredClient, record: RefreshTokenRecord | undefined, now: number) {
  return {
    limit: client.config.refreshTokenRotationsPerMinute,
    windowMs: 60_000,
    ttlMs: Math.max(1000, (record?.absoluteExpiresAt ?? now) - now),
  };
}

/** RFC 6585 §4: the family is past its rate; nothing was rotated, the same token works later. */
function rotationsLimited(retryAfterMs: number): OAuthError {
  return new OAuthError(OAuthErrors.tooManyRefreshRotations, { retryAfter: Math.max(1, Math.ceil(retryAfterMs / 1000)) });
}

/**
 * RFC 9449 §5: a bound refresh token (a public client's) is refreshed only with a proof by its
 * key; the attempt leaves the token untouched, so a thief without the key cannot burn the family.
 */
/**
 * What a refresh (or a grace-window retry) issues from its record: the key binding checked, the
 * scope and resources narrowed as the request asks, and the user asked about by the profile
 * service, where a user who is no longer active gets nothing and the token stays as it is
 * (IdentityServer's rule).
 */
async function grantOfRecord(request: GrantRequest, services: GrantServices, record: RefreshTokenRecord) {
  checkKeyBinding(request, record);
  // A refresh may ask for less than was granted, never more; the token record keeps the whole grant.
  const { scopes } = narrowStoredGrant(services.scopes, request.client, record, request.params, 'narrows');
  return profiledGrant(request, services, { scopes, subject: record.subject, claims: record.claims }, record.openId !== undefined);
}

function checkKeyBinding(request: GrantRequest, record: RefreshTokenRecord): void {
  if (record.jkt !== undefined && request.jkt !== record.jkt) throw new OAuthError(OAuthErrors.refreshTokenKeyMismatch);
  if (record.x5t !== undefined && request.x5t !== record.x5t) throw new OAuthError(OAuthErrors.refreshTokenCertificateMismatch);
}

/**
 * RFC 9700 §4.14.2: a refresh token presented after it was rotated may be held by someone else,
 * so its whole family goes, remembered as long as any token of the family could live.
 */
function refreshTokenItem(handle: FamilyHandle, clientId: string, facts: TaskFacts | undefined): SingleUseItem<RefreshTokenRecord> {
  return {
    name: 'refresh token',
    kind: 'refresh_token',
    key: handle.key,
    family: handle.family,
    clientId,
    invalid: invalidGrant,
    replayRetentionMs: (retired, now) => Math.max(1000, retired.absoluteExpiresAt - now),
    facts,
  };
}

/**
 * A token that is no longer live: a retry within its client's grace window, a replay, or nothing
 * of this family, told apart in one atomic store step ({@link Store.chainLookup}) on the store's
 * own clock. A retired token presented again within the window (counted from the moment the
 * store applied its rotation), while the successor it was rotated to is unused: the answer to
 * that rotation was lost (a timeout, a dropped connection), so the client gets the same successor
 * with a fresh access token, and one chain continues. Any other retired token of the family is
 * reuse and revokes it (RFC 9700 §4.14.2). Always answers or throws. `looked`: that step's answer,
 * when the caller's own store call gave it already ({@link refreshInOneTrip}).
 */
async function retiredToken(
  request: GrantRequest,
  services: GrantServices,
  retired: FamilyHandle,
  item: SingleUseItem<RefreshTokenRecord>,
  looked?: ChainLookup<RefreshTokenRecord, RetryRecord>,
): Promise<TokenResponse> {
  const { store } = services;
  const client = request.client;
  const graceMs = client.config.refreshTokenUsage === 'oneTimeOnly' ? client.config.refreshTokenReuseGraceSeconds * 1000 : 0;
  const found =
    looked ?? (await store.chainLookup<RefreshTokenRecord, RetryRecord>(retired.key, graceMs, chainLimits(client, undefined, 0)));
  if (found.status === 'limited') throw rotationsLimited(found.retryAfterMs);
  if (found.status === 'missing') throw invalidGrant();
  if (found.status === 'replayed') return refuseOutcome(services, item, found);
  const record = found.successor;
  // Another client derives another handle from the nonce: it never held this chain.
  const opened = openRetryRecord(retired, found.retry, client.clientId);
  const successor = opened === undefined ? undefined : parseRefreshHandle(opened);
  if (
    successor === undefined ||
    successor.family !== retired.family ||
    successor.key.id !== found.successorId ||
    record.clientId !== client.clientId
  ) {
    throw invalidGrant();
  }
  const now = services.now();
  if (record.expiresAt <= now || record.absoluteExpiresAt <= now) throw invalidGrant();
  const grant = await grantOfRecord(request, services, record);
  const accessToken = signAccessToken(request, services, grant, now);
  const idToken = signIdToken(request, services, grant, record.openId, accessToken, now);
  // Checked and recorded in one step: if the successor was used (or the family was revoked)
  // since it was read, this is reuse after all.
  const issued = issuedAccessTokenRecord(record.family, accessToken, now);
  if (!(await store.writeWhileLive([successor.key], issued))) return refuseOutcome(services, item, { status: 'replayed', value: record });
  services.logger.info({ clientId: client.clientId }, 'refresh token presented again within its grace window: answered with its successor');
  return tokenResponse(request, accessToken, grant.scopes.scope, successor.handle, idToken);
}

/**
 * {@link appliedLate} for a one-trip rotation, which has no record to answer from: the chain's
 * lookup (a write, so a store with `waitForReplicas` follows it with `WAIT`, as for `appliedLate`)
 * tells whether the presented token was just rotated and gives its live successor. Counts as an
 * issuance of the rate limit, as a retry does. `undefined` when not, or when the store fails again.
 */
async function appliedLateRecord(
  store: Store,
  handle: FamilyHandle,
  graceMs: number,
  client: RegisteredClient,
): Promise<{ successorId: string; successor: RefreshTokenRecord } | undefined> {
  try {
    // Even with no grace window: the rotation was this request's own, applied moments ago.
    const found = await store.chainLookup<RefreshTokenRecord, RetryRecord>(
      handle.key,
      Math.max(graceMs, 60_000),
      chainLimits(client, undefined, 0),
    );
    return found.status === 'retry' ? found : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a rotation that failed was applied after all: its successor is live. Asked with
 * `writeWhileLive` (no record), not `get`: a store with `waitForReplicas` follows it with `WAIT`,
 * so a successor the master holds but no replica acknowledged (a failover about to lose it) is not
 * answered; the client retries, and the grace window or the rotation on the new master carries
 * its chain (docs/operations.md, "What a failover costs"; issue 36).
 */
async function appliedLate(store: Store, successor: StoreKey): Promise<boolean> {
  try {
    return await store.writeWhileLive([successor]);
  } catch {
    return false;
  }
}
