/**
 * Signing keys kept in the store (no `signing.keys` configured): what one record holds and when
 * each key signs, is retired and leaves the JWKS (docs/operations.md, "Signing keys and rotation").
 * Pure functions of the records and the clock, so every gateway computes the same set and order.
 */
import type { KeyActivation, PublishedKeySet } from '../../core/key_set.js';
import type { SigningKeyMaterial } from '../../core/signing_key.js';

/** One store-kept key: its private JWK and its schedule (epoch ms). */
export interface StoredSigningKey extends SigningKeyMaterial {
  /** The store record's id, so an expired key can be deleted. */
  readonly recordId: string;
  readonly createdAt: number;
  /** When it starts signing; it is published from `createdAt`. */
  readonly activatesAt: number;
}

export type KeyState = 'next' | 'active' | 'retired';

export interface ScheduledKey {
  readonly key: StoredSigningKey;
  readonly state: KeyState;
  /** When it leaves the JWKS: its successor's activation plus the retention; `null` while it signs or waits. */
  readonly expiresAt: number | null;
}

/** Oldest first: by activation, then kid, so that every node sorts the same records the same way. */
export function byActivation(a: StoredSigningKey, b: StoredSigningKey): number {
  return a.activatesAt - b.activatesAt || (a.kid < b.kid ? -1 : a.kid > b.kid ? 1 : 0);
}

/** The state of each key at `now`, oldest first; expired keys included (to be deleted). */
export function scheduleKeys(records: readonly StoredSigningKey[], retentionMs: number, now: number): ScheduledKey[] {
  const keys = [...records].sort(byActivation);
  let active = 0;
  keys.forEach((key, i) => {
    if (key.activatesAt <= now) active = i;
  });
  return keys.map((key, i) => {
    if (i > active) return { key, state: 'next', expiresAt: null };
    if (i === active) return { key, state: 'active', expiresAt: null };
    return { key, state: 'retired', expiresAt: (keys[i + 1] as StoredSigningKey).activatesAt + retentionMs };
  });
}

/** Whether a scheduled key is still in the JWKS at `now`. */
export function isPublished(scheduled: ScheduledKey, now: number): boolean {
  return scheduled.expiresAt === null || scheduled.expiresAt > now;
}

/**
 * The published set: in the JWKS newest first (by activation, then kid); each key with its
 * activation for the workers.
 */
export function publishedSetOf(schedule: readonly ScheduledKey[], now: number): PublishedKeySet {
  const published = schedule.filter((s) => isPublished(s, now)).map((s) => s.key);
  const activations: KeyActivation[] = published.map((k) => ({ kid: k.kid, activatesAt: k.activatesAt }));
  const keys: SigningKeyMaterial[] = [...published].reverse().map(({ kid, alg, jwk }) => ({ kid, alg, jwk }));
  return { keys, activations };
}
