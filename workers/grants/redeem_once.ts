/**
 * Redeem-once, the step every grant that exchanges a single-use item for tokens shares: an
 * authorization code (RFC 6749 §4.1.2), a refresh token under rotation (RFC 9700 §4.14.2), an
 * approved device code (RFC 8628 §3.5). The consume is one atomic store operation, so of any number
 * of concurrent redemptions exactly one wins; a redemption that finds the item consumed already
 * is a replay, and a replayed item revokes what it was exchanged for: someone else may hold it.
 */
import type { OAuthError } from '../../core/oauth_errors.js';
import type { ReusedItem, TaskFacts } from '../../wire/task_facts.js';
import { noteReuse } from '../task_facts_recorder.js';
import type { CompanionRecord, ConsumeResult, StoreKey } from '../../core/store/store.js';
import { revokeRefreshFamily } from '../../core/records/family_revocation.js';
import type { GrantServices } from './grant_handler.js';

/** What every single-use record holds: the client it was issued to. */
export interface Redeemable {
  readonly clientId: string;
}

/** A single-use item as the grant presented it. */
export interface SingleUseItem<T extends Redeemable> {
  /** What the log calls it ("authorization code"). */
  readonly name: string;
  /** What its audit event calls it. */
  readonly kind: ReusedItem;
  readonly key: StoreKey;
  /** The family of the tokens it is exchanged for: what a replay revokes. */
  readonly family: string;
  /** Who presents it: a replay by another client revokes nothing, it never held the tokens. */
  readonly clientId: string;
  /** What every refused redemption throws. */
  readonly invalid: () => OAuthError;
  /**
   * How long the revocation of a replayed item's family is remembered. Without it a replay is
   * refused and revokes nothing (a device polling once more after success, RFC 8628 §3.5).
   */
  readonly replayRetentionMs?: (value: T, nowMs: number) => number;
  /** The request's facts, where a replay is noted (`GrantRequest.facts`). */
  readonly facts?: TaskFacts | undefined;
}

/** What redeeming needs of the grant services. */
export type RedeemServices = Pick<GrantServices, 'store' | 'now' | 'logger'>;

/** A record written in the consume's own atomic step, only when it wins (see `Store.rotate`). */
export interface Successor<U> {
  readonly key: StoreKey;
  readonly value: U;
  readonly ttlMs: number;
  readonly companion?: CompanionRecord<unknown> | readonly CompanionRecord<unknown>[] | undefined;
}

/**
 * Consumes the item, with its `successor` when one is given, in one store operation; resolves the
 * item's value for the one redemption that wins. Throws `item.invalid()` for every other one,
 * after revoking what a replayed item was exchanged for.
 */
export async function redeemOnce<T extends Redeemable, U = unknown>(
  services: RedeemServices,
  item: SingleUseItem<T>,
  successor?: Successor<U>,
): Promise<T> {
  const outcome = await redeemOrReplayed(services, item, successor);
  if (outcome.status === 'consumed') return outcome.value;
  return refuse(services, item, outcome);
}

/**
 * As {@link redeemOnce}, but a replay by the item's own client is handed back, not refused yet:
 * for a grant that may still answer it (a refresh retried within its grace window). The grant
 * refuses it with {@link refuseRedeemed} when it cannot. A missing item, or another client's
 * replay, throws `item.invalid()` as always.
 */
export async function redeemOrReplayed<T extends Redeemable, U = unknown>(
  services: RedeemServices,
  item: SingleUseItem<T>,
  successor?: Successor<U>,
): Promise<{ status: 'consumed' | 'replayed'; value: T }> {
  const { store } = services;
  const outcome =
    successor === undefined
      ? await store.consume<T>(item.key)
      : await store.rotate<T, U>(item.key, successor.key, successor.value, successor.ttlMs, successor.companion);
  if (outcome.status === 'consumed' || (outcome.status === 'replayed' && outcome.value.clientId === item.clientId)) return outcome;
  return refuse(services, item, outcome);
}

/**
 * For an item the grant's `get` no longer finds: consumed before (a replay) or gone. The consume
 * tells which, and costs a store call only on this failure path. Always throws `item.invalid()`.
 */
export async function refuseRedeemed<T extends Redeemable>(services: RedeemServices, item: SingleUseItem<T>): Promise<never> {
  return refuse(services, item, await services.store.consume<T>(item.key));
}

/**
 * Refuses a redemption whose outcome the caller already has (`replayed` with the retired value:
 * its family is revoked when it was the presenting client's). Always throws `item.invalid()`.
 */
export function refuseOutcome<T extends Redeemable>(
  services: RedeemServices,
  item: SingleUseItem<T>,
  outcome: ConsumeResult<T>,
): Promise<never> {
  return refuse(services, item, outcome);
}

async function refuse<T extends Redeemable>(services: RedeemServices, item: SingleUseItem<T>, outcome: ConsumeResult<T>): Promise<never> {
  const retention = item.replayRetentionMs;
  if (outcome.status === 'replayed' && retention !== undefined && outcome.value.clientId === item.clientId) {
    const now = services.now();
    await revokeRefreshFamily(services.store, item.family, retention(outcome.value, now), now);
    services.logger.warn({ clientId: item.clientId }, `${item.name} redeemed twice: its family is revoked`);
    const subject = (outcome.value as { subject?: unknown }).subject;
    noteReuse(item.facts, item.kind, typeof subject === 'string' ? subject : undefined);
  }
  throw item.invalid();
}
