/**
 * What a user has given a client, in the store (docs/storage.md, "Records"): the remembered
 * consent (IdentityServer's `AllowRememberConsent` / `ConsentLifetime`) and the grant families that
 * can still yield tokens (a code or device code with `offline_access`, whose refresh tokens share
 * its family). Both live in one store family per user, `user.<h(subject)>`, so that one
 * `familyRecords` lists a user's grants and the keys name neither the user nor the client in
 * clear. The grants page (gateway/pages/grants_page.ts) lists and revokes them; an admin API can
 * call {@link revokeUserGrant} the same way.
 */
import type { RegisteredClient } from '../../core/client_model.js';
import { revokeRefreshFamily } from '../../core/records/family_revocation.js';
import type { StoreKey, Store } from '../../core/store/store.js';
import { subjectDigest } from '../../core/throttles.js';

/** A remembered consent: the scopes (and RFC 8707 resources) a user allowed a client. */
export interface ConsentRecord {
  readonly v: 1;
  readonly clientId: string;
  readonly scopes: readonly string[];
  /** The `resource` values of the request consented to; absent when it named none. */
  readonly resources?: readonly string[];
  /** Epoch ms. */
  readonly createdAt: number;
  /** Epoch ms; `null`: kept until revoked (no `consentLifetime`). */
  readonly expiresAt: number | null;
}

/** A grant family of a user and client that a refresh token may come from. */
export interface GrantFamilyRecord {
  readonly v: 1;
  readonly clientId: string;
  readonly family: string;
  /** Epoch ms: when nothing of the family can live any more. */
  readonly expiresAt: number;
}

/**
 * A consent without `consentLifetime` is kept until revoked; the store has no record without a
 * TTL, so it gets the longest Tessera uses (store-kept keys'): ten years.
 */
const untilRevokedMs = 10 * 365 * 86_400_000;

/** The store family of one user's grants: the subject hashed (docs/storage.md). */
function userFamily(subject: string): string {
  return `user.${subjectDigest(subject)}`;
}

function consentKey(subject: string, clientId: string): StoreKey {
  return { kind: 'consent', id: subjectDigest(clientId), family: userFamily(subject) };
}

function grantFamilyKey(subject: string, family: string): StoreKey {
  return { kind: 'grant', id: family, family: userFamily(subject) };
}

/**
 * The remembered consent of `subject` for `client`, when the client still allows remembering
 * (a client that stopped allowing it asks every time, as IdentityServer does).
 */
export async function findConsent(store: Store, subject: string, client: RegisteredClient): Promise<ConsentRecord | undefined> {
  if (!client.config.allowRememberConsent) return undefined;
  return (await store.get<ConsentRecord>(consentKey(subject, client.clientId))) ?? undefined;
}

/**
 * Whether a remembered consent covers a request: every scope and resource asked for was
 * consented to. `offline_access` always asks again (OIDC Core §11: offline access needs the
 * user's consent unless other conditions are known; IdentityServer's default consent service
 * does the same).
 */
export function consentCovers(consent: ConsentRecord, scopes: readonly string[], resources: readonly string[] | undefined): boolean {
  if (scopes.includes('offline_access')) return false;
  const consented = new Set(consent.scopes);
  if (!scopes.every((s) => consented.has(s))) return false;
  if (resources === undefined) return true;
  const allowed = new Set(consent.resources ?? []);
  return resources.every((r) => allowed.has(r));
}

/**
 * Records the decision of a consent page whose client allows remembering: the scopes granted when
 * the user ticked "remember my decision", and forgets an earlier one when they did not (the
 * decision remembered is the latest, as IdentityServer's `UpdateConsentAsync`).
 */
export async function rememberDecision(
  store: Store,
  subject: string,
  client: RegisteredClient,
  granted: { scopes: readonly string[]; resources: readonly string[] | undefined } | undefined,
  nowMs: number,
): Promise<void> {
  const key = consentKey(subject, client.clientId);
  if (granted === undefined) {
    await store.delete(key);
    return;
  }
  const lifetime = client.config.consentLifetime;
  const ttlMs = lifetime === undefined ? untilRevokedMs : lifetime * 1000;
  const record: ConsentRecord = {
    v: 1,
    clientId: client.clientId,
    scopes: granted.scopes,
    ...(granted.resources !== undefined ? { resources: granted.resources } : {}),
    createdAt: nowMs,
    expiresAt: lifetime === undefined ? null : nowMs + ttlMs,
  };
  await store.set(key, record, ttlMs);
}

/**
 * Notes a grant family that can yield refresh tokens (`offline_access` granted), before its code
 * or approval is written: a revocation that lists the user's grants meanwhile finds it, and the
 * code's write into the revoked family then fails.
 */
export async function recordGrantFamily(
  store: Store,
  subject: string,
  client: RegisteredClient,
  family: string,
  nowMs: number,
): Promise<void> {
  const { config } = client;
  const lifetimeMs =
    Math.max(config.absoluteRefreshTokenLifetime, config.authorizationCodeLifetime, config.deviceCodeLifetime + 600) * 1000;
  const record: GrantFamilyRecord = { v: 1, clientId: client.clientId, family, expiresAt: nowMs + lifetimeMs };
  // Listing forgets the names of the user's expired grants (Redis keeps them in the family's
  // members SET otherwise; docs/storage.md): the family stays the size of the live grants.
  await store.familyRecords(userFamily(subject), 'grant');
  await store.set(grantFamilyKey(subject, family), record, lifetimeMs);
}

/** One client on a user's grants page. */
export interface UserGrant {
  readonly clientId: string;
  readonly consent: ConsentRecord | undefined;
  /** Grant families that may still hold refresh tokens. */
  readonly families: number;
}

/** The clients `subject` has a remembered consent or a live grant family with, by client id. */
export async function listUserGrants(store: Store, subject: string): Promise<UserGrant[]> {
  const family = userFamily(subject);
  const [consents, families] = await Promise.all([
    store.familyRecords<ConsentRecord>(family, 'consent'),
    store.familyRecords<GrantFamilyRecord>(family, 'grant'),
  ]);
  const byClient = new Map<string, { consent: ConsentRecord | undefined; families: number }>();
  const entry = (clientId: string) => {
    let found = byClient.get(clientId);
    if (found === undefined) byClient.set(clientId, (found = { consent: undefined, families: 0 }));
    return found;
  };
  for (const consent of consents) entry(consent.clientId).consent = consent;
  for (const grant of families) entry(grant.clientId).families += 1;
  return [...byClient.entries()]
    .map(([clientId, found]) => ({ clientId, ...found }))
    .sort((a, b) => (a.clientId < b.clientId ? -1 : a.clientId > b.clientId ? 1 : 0));
}

/** What {@link revokeUserGrant} removed. */
export interface RevokedGrant {
  readonly consent: boolean;
  /** Grant families revoked: their codes, refresh tokens, and access tokens (deny-listed). */
  readonly families: number;
}

/**
 * Revokes everything `subject` gave `clientId` (IdentityServer's grants page, "revoke access"):
 * the remembered consent and every grant family, so that its refresh tokens answer
 * `invalid_grant` and its access tokens are denied at introspection. For the grants page and an
 * admin API.
 *
 * @example
 * ```ts
 * const revoked = await revokeUserGrant(store, '818727', 'web', Date.now());
 * ```
 */
export async function revokeUserGrant(store: Store, subject: string, clientId: string, nowMs: number): Promise<RevokedGrant> {
  const grants = await store.familyRecords<GrantFamilyRecord>(userFamily(subject), 'grant');
  const mine = grants.filter((g) => g.clientId === clientId);
  await Promise.all(
    mine.map(async (grant) => {
      await revokeRefreshFamily(store, grant.family, Math.max(1000, grant.expiresAt - nowMs), nowMs);
      await store.delete(grantFamilyKey(subject, grant.family));
    }),
  );
  const consent = await store.delete(consentKey(subject, clientId));
  return { consent, families: mine.length };
}
