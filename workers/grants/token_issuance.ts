import { buildAccessTokenClaims } from '../tokens/access_token.js';
import { newFamilyId, newRefreshHandle } from '../../core/records/refresh_token_handle.js';
import { refreshExpiry, type RefreshTokenRecord } from '../tokens/refresh_token_record.js';
import { issuedAccessTokenRecord, type IssuedAccessToken } from '../../core/records/family_revocation.js';
import type { DerivedRecord, StoreKey } from '../../core/store/store.js';
import { offlineAccessScope } from '../../core/rules/scope_rules.js';
import type { GrantRequest, GrantServices, TokenResponse } from './grant_handler.js';
import { redeemOnce, type Redeemable, type SingleUseItem } from './redeem_once.js';
import { noteIssued } from '../task_facts_recorder.js';
import type { TokenGrant } from './token_grant.js';

export type { TokenGrant } from './token_grant.js';

/** For grants that issue ID tokens (code, device, and refreshes of those). */
export interface OpenIdGrant {
  nonce?: string | undefined;
  sid?: string | undefined;
}

/** Issuance options of the user-centric grants. */
export interface IssueOptions<T extends Redeemable = Redeemable> {
  /** Issue an ID token when `openid` is granted. */
  openId?: OpenIdGrant;
  /**
   * A single-use item (an authorization code, an approved device code) redeemed by this issuance
   * (see `redeemOnce`), consumed in the same atomic step that stores the refresh token; the
   * tokens join its family.
   */
  redeem?: SingleUseItem<T>;
}

export interface SignedAccessToken extends IssuedAccessToken {
  readonly token: string;
}

/** Signs the RFC 9068 access token of a grant. */
export function signAccessToken(
  request: GrantRequest,
  services: GrantServices,
  grant: TokenGrant,
  nowMs = services.now(),
  jti?: string,
): SignedAccessToken {
  const input: Parameters<typeof buildAccessTokenClaims>[0] = {
    issuer: services.issuer,
    client: request.client,
    scopes: grant.scopes,
    now: Math.floor(nowMs / 1000),
  };
  if (grant.subject !== undefined) input.subject = grant.subject;
  if (grant.claims !== undefined) input.claims = grant.claims;
  if (grant.profile !== undefined) input.claims = { ...grant.claims, ...grant.profile.accessToken };
  if (request.jkt !== undefined) input.jkt = request.jkt;
  if (request.x5t !== undefined) input.x5t = request.x5t;
  if (jti !== undefined) input.jti = jti;
  const claims = buildAccessTokenClaims(input);
  noteIssued(request.facts, claims.jti as string, grant.subject);
  return { token: services.signer.sign(claims, 'at+jwt'), jti: claims.jti as string, exp: claims.exp as number };
}

export function tokenResponse(
  request: GrantRequest,
  accessToken: SignedAccessToken,
  scope: string,
  refreshToken?: string,
  idToken?: string,
): TokenResponse {
  const response: TokenResponse = {
    access_token: accessToken.token,
    // RFC 9449 §5.1: a DPoP-bound access token is of type DPoP.
    token_type: request.jkt === undefined ? 'Bearer' : 'DPoP',
    expires_in: request.client.config.accessTokenLifetime,
    scope,
  };
  if (refreshToken !== undefined) response.refresh_token = refreshToken;
  if (idToken !== undefined) response.id_token = idToken;
  return response;
}

/**
 * RFC 9449 §5, RFC 8705 §4: a public client's refresh token is bound to the DPoP key or the TLS
 * certificate it was issued with, and every refresh must prove possession of it; a confidential
 * client's is not (it authenticates, and may roll its certificate over).
 */
function refreshTokenBinding(request: GrantRequest): { jkt?: string; x5t?: string } {
  if (request.client.requireSecret || request.client.config.tokenEndpointAuthMethod !== undefined) return {};
  const binding: { jkt?: string; x5t?: string } = {};
  if (request.jkt !== undefined) binding.jkt = request.jkt;
  if (request.x5t !== undefined) binding.x5t = request.x5t;
  return binding;
}

/** An ID token for a user grant that was granted `openid`; `undefined` otherwise. */
export function signIdToken(
  request: GrantRequest,
  services: GrantServices,
  grant: TokenGrant,
  openId: OpenIdGrant | undefined,
  accessToken: SignedAccessToken,
  nowMs: number,
): string | undefined {
  if (openId === undefined || grant.subject === undefined || !grant.scopes.scopes.includes('openid')) return undefined;
  const authTime = grant.claims?.auth_time;
  const payload = services.idTokens.build({
    client: request.client,
    subject: grant.subject,
    scopes: grant.scopes,
    authTime: typeof authTime === 'number' ? authTime : undefined,
    nonce: openId.nonce,
    sid: openId.sid,
    accessToken: accessToken.token,
    claims: grant.claims,
    profileClaims: grant.profile?.idToken,
    now: Math.floor(nowMs / 1000),
  });
  return services.signer.sign(payload, 'JWT');
}

/**
 * A user grant as the profile service sees it (user_profiles.ts): refused for a user who is no
 * longer active, with the claims it gives. Without a profile service, or for a client-only token,
 * the grant as it is.
 */
export async function profiledGrant(
  request: GrantRequest,
  services: GrantServices,
  grant: TokenGrant,
  openId: boolean,
): Promise<TokenGrant> {
  const { profiles } = services;
  const subject = grant.subject;
  if (profiles === undefined || subject === undefined) return grant;
  return profiles.profiled(request, { ...grant, subject }, openId && grant.scopes.scopes.includes('openid'));
}

/**
 * The refresh token a code or device code redemption in one store call writes
 * ({@link Store.redeemRecord}): the record {@link issueTokens} would, made by the store from the
 * redeemed record's fields (`subject`, `scopes`, `resources`, `claims`, `sid`), and written only
 * when its scopes include `offline_access`. For a client allowed offline access.
 */
export function derivedRefreshToken(request: GrantRequest, family: string, now: number): { handle: string; derived: DerivedRecord } {
  const client = request.client.config;
  const handle = newRefreshHandle(family);
  const absoluteExpiresAt = now + client.absoluteRefreshTokenLifetime * 1000;
  const expiresAt = refreshExpiry(client, absoluteExpiresAt, now);
  return {
    handle: handle.handle,
    derived: {
      key: handle.key,
      ttlMs: expiresAt - now,
      whenScope: offlineAccessScope,
      set: {
        v: 1,
        clientId: request.client.clientId,
        family,
        createdAt: now,
        absoluteExpiresAt,
        expiresAt,
        ...refreshTokenBinding(request),
      },
      copy: ['subject', 'scopes', 'resources', 'claims'],
      nest: { openId: ['sid'] },
    },
  };
}

/**
 * The step every grant ends with: sign the access token and, for a user who was granted
 * `offline_access` by a client allowed it, start a refresh-token family. The refresh token is
 * stored before anything is returned, so no token is issued whose state was not written.
 */
export async function issueTokens<T extends Redeemable>(
  request: GrantRequest,
  services: GrantServices,
  decided: TokenGrant,
  options: IssueOptions<T> = {},
): Promise<TokenResponse> {
  const grant = await profiledGrant(request, services, decided, options.openId !== undefined);
  const { store } = services;
  const now = services.now();
  const client = request.client.config;
  const accessToken = signAccessToken(request, services, grant, now);
  const idToken = signIdToken(request, services, grant, options.openId, accessToken, now);
  const wantsRefresh = grant.subject !== undefined && grant.scopes.offlineAccess && client.allowOfflineAccess;
  const redeem = options.redeem;
  if (!wantsRefresh && redeem === undefined) return tokenResponse(request, accessToken, grant.scopes.scope, undefined, idToken);

  const family = redeem?.family ?? newFamilyId();
  const issued = issuedAccessTokenRecord(family, accessToken, now);
  // A redemption that starts a refresh family records the access token in its rotation's atomic
  // step; otherwise it is recorded before anything is committed, so that a revocation racing
  // this issuance finds it.
  if ((redeem === undefined || !wantsRefresh) && issued !== undefined) await store.set(issued.key, issued.value, issued.ttlMs);
  let refresh: { handle: string; key: StoreKey; record: RefreshTokenRecord } | undefined;
  if (wantsRefresh) {
    const handle = newRefreshHandle(family);
    const absoluteExpiresAt = now + client.absoluteRefreshTokenLifetime * 1000;
    const record: RefreshTokenRecord = {
      v: 1,
      clientId: request.client.clientId,
      subject: grant.subject as string,
      scopes: grant.bound?.scopes ?? grant.scopes.scopes,
      ...(grant.bound?.resources !== undefined ? { resources: grant.bound.resources } : {}),
      claims: grant.claims ?? {},
      family,
      createdAt: now,
      absoluteExpiresAt,
      expiresAt: refreshExpiry(client, absoluteExpiresAt, now),
      ...(options.openId !== undefined ? { openId: { sid: options.openId.sid } } : {}),
      ...refreshTokenBinding(request),
    };
    refresh = { handle: handle.handle, key: handle.key, record };
  }

  if (redeem !== undefined) {
    const successor =
      refresh === undefined
        ? undefined
        : { key: refresh.key, value: refresh.record, ttlMs: refresh.record.expiresAt - now, companion: issued };
    await redeemOnce(services, redeem, successor);
  } else if (refresh !== undefined) {
    await store.set(refresh.key, refresh.record, refresh.record.expiresAt - now);
  }
  return tokenResponse(request, accessToken, grant.scopes.scope, refresh?.handle, idToken);
}
