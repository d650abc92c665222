/**
 * A change of one store-kept record that loses no concurrent change and brings back no deleted
 * record (docs/storage.md, "Compare-and-set"): the one retry loop of the client registry's changes
 * and removals and of the API resource registry's changes (docs/operations.md, "Admin API",
 * "Concurrent changes").
 */
import type { Store, StoreKey } from '../../core/store/store.js';

/**
 * Tries of one change before it gives up as a conflict. Each lost try means another change of the
 * same record was written in between, so n concurrent changes of one record all get through
 * within n tries: 32 covers 32 at once.
 */
export const maxChangeAttempts = 32;

/**
 * What an edit makes of the record as stored now: the value to write (`null` deletes the record),
 * or a refusal `F` that ends the change with nothing written. Called again with the new current
 * value after a conflict, so it must depend on nothing but its argument (and what it captured
 * before).
 */
export type RecordEdit<N, F> = { readonly next: N } | { readonly refused: F };

/** How {@link changeRecord} ended. */
export type RecordChange<T, N, F> =
  /** `next` replaced `previous`, the value the edit was given. */
  | { readonly status: 'written'; readonly previous: T; readonly next: N }
  | { readonly status: 'refused'; readonly refused: F }
  /** No such record (never was, or deleted before the change could be written): nothing written. */
  | { readonly status: 'missing' }
  /** The record changed under every one of {@link maxChangeAttempts} tries: nothing written; `current` is what it held at the last. */
  | { readonly status: 'conflict'; readonly current: T };

/**
 * How a registry's change of one of its records ended, as its callers see it (the admin API, RFC
 * 7592 updates): `written` with the record written; a `conflict` answers `409 conflict`.
 */
export type ChangeOutcome<R, F> =
  | { readonly status: 'written'; readonly record: R }
  | { readonly status: 'refused'; readonly refused: F }
  | { readonly status: 'missing' }
  | { readonly status: 'conflict' };

/** The record {@link changeRecord} changes. */
export interface ChangedRecord<T> {
  readonly key: StoreKey;
  /** The TTL a write gives the record. */
  readonly ttlMs: number;
  /** Whether a value stored under `key` is this record's (keys are hashes of names: not another name's). */
  readonly owns: (value: T) => boolean;
}

/**
 * Reads the record, lets `edit` make the new value of it, and replaces the record only if it is
 * still the one read (`Store.replaceIfUnchanged`); when another change came in between, `edit`
 * runs again on the value stored now, up to {@link maxChangeAttempts} times. No lock: a stalled
 * or vanished caller holds up nobody.
 */
export async function changeRecord<T, N extends T | null, F>(
  store: Store,
  record: ChangedRecord<T>,
  edit: (current: T) => RecordEdit<N, F>,
): Promise<RecordChange<T, N, F>> {
  const found = await store.get<T>(record.key);
  let current: T | null = found !== null && record.owns(found) ? found : null;
  for (let attempt = 1; current !== null; attempt += 1) {
    const edited = edit(current);
    if ('refused' in edited) return { status: 'refused', refused: edited.refused };
    const outcome = await store.replaceIfUnchanged<T>(record.key, current, edited.next, record.ttlMs);
    if (outcome.status === 'replaced') return { status: 'written', previous: current, next: edited.next };
    if (outcome.status === 'missing' || !record.owns(outcome.current)) break;
    if (attempt >= maxChangeAttempts) return { status: 'conflict', current: outcome.current };
    current = outcome.current;
  }
  return { status: 'missing' };
}
