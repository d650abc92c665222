import { randomInt } from 'node:crypto';
import { hashHandle } from '../store/handle.js';
import type { StoreKey } from '../store/store.js';
import type { ClaimValue } from '../validator_api.js';

/** RFC 8628 §6.1: consonants only, so no word can be spelled and nothing looks alike. */
export const userCodeAlphabet = 'BCDFGHJKLMNPQRSTVWXZ';
const userCodeLength = 8;

/** What the store keeps for one device authorization (keyed by SHA-256 of the device code). */
export interface DeviceCodeRecord {
  readonly v: 1;
  readonly clientId: string;
  readonly scopes: readonly string[];
  /**
   * The device authorization request's `resource` values (RFC 8707 §2): the token request may
   * narrow to some of them. Absent (and in records written before it existed): every resource of `scopes`.
   */
  readonly resources?: readonly string[] | undefined;
  /** Epoch ms when `expires_in` ends; the record lives a little longer to answer `expired_token`. */
  readonly expiresAt: number;
  readonly status: 'pending' | 'approved' | 'denied';
  /** Set on approval. */
  readonly subject?: string;
  readonly claims?: Readonly<Record<string, ClaimValue>>;
  readonly sid?: string;
  readonly family: string;
}

/** Polling state, kept apart from the record so a poll can never overwrite an approval. */
export interface PollState {
  /** Epoch ms of the last poll. */
  readonly lastPollAt: number;
  /** Seconds; grows by 5 with every `slow_down` (RFC 8628 §3.5). */
  readonly interval: number;
}

/** Where the user code points: the device record. */
export interface UserCodeRecord {
  readonly deviceKey: StoreKey;
  readonly clientId: string;
}

/** How long after expiry the record stays to tell `expired_token` from an unknown code. */
export const expiredGraceMs = 10 * 60 * 1000;

export function newUserCode(): string {
  let code = '';
  for (let i = 0; i < userCodeLength; i++) code += userCodeAlphabet[randomInt(userCodeAlphabet.length)];
  return code;
}

/** `BCDFGHJK` as users read it: `BCDF-GHJK`. */
export function displayUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/** Case, dashes and spaces do not matter when a user types the code (RFC 8628 §6.1). */
export function normalizeUserCode(input: string): string | undefined {
  const code = input.toUpperCase().replace(/[\s-]/g, '');
  if (code.length !== userCodeLength) return undefined;
  for (const c of code) if (!userCodeAlphabet.includes(c)) return undefined;
  return code;
}

export function userCodeKey(code: string): StoreKey {
  return { kind: 'uc', id: hashHandle(code) };
}

export function pollStateKey(deviceKey: StoreKey): StoreKey {
  return { kind: 'misc', id: `poll:${deviceKey.id}`, ...(deviceKey.family !== undefined ? { family: deviceKey.family } : {}) };
}
