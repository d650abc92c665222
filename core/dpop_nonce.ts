/**
 * DPoP server nonces (RFC 9449 §8), stateless so that every gateway and every worker thread accepts
 * the nonce another one gave out: a nonce is a time slot and an HMAC of it under a key all of them
 * share (derived from the page secret, gateway/keys/dpop_nonce_key.ts). The gateway puts the current
 * nonce in `DPoP-Nonce` response headers; the workers check the `nonce` claim of proofs.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { RegisteredClient } from './client_model.js';
import type { DPoPConfig } from './worker_config.js';

// 128 bits of HMAC-SHA-256: forging one means guessing it.
const macBytes = 16;

export class DPoPNonces {
  readonly #key: Uint8Array;
  readonly #lifetimeMs: number;
  // One nonce per slot, made when the slot starts: the cache never grows.
  #slot = -1;
  #nonce = '';

  /** `key`: the shared secret (32 bytes); `lifetimeSeconds`: `dpop.nonceLifetimeSeconds`. */
  constructor(key: Uint8Array, lifetimeSeconds: number) {
    this.#key = key;
    this.#lifetimeMs = lifetimeSeconds * 1000;
  }

  /** The nonce to hand out now (`DPoP-Nonce`), valid for this slot and the next. */
  current(nowMs: number): string {
    const slot = Math.floor(nowMs / this.#lifetimeMs);
    if (slot !== this.#slot) {
      this.#nonce = `${slot.toString(36)}.${this.#mac(slot).toString('base64url')}`;
      this.#slot = slot;
    }
    return this.#nonce;
  }

  /** Whether `nonce` was handed out in this slot or the previous one (by any gateway). */
  isValid(nonce: unknown, nowMs: number): boolean {
    if (typeof nonce !== 'string' || nonce.length > 64) return false;
    const dot = nonce.indexOf('.');
    if (dot <= 0) return false;
    const slotText = nonce.slice(0, dot);
    if (!/^[0-9a-z]{1,11}$/.test(slotText)) return false;
    const slot = Number.parseInt(slotText, 36);
    const now = Math.floor(nowMs / this.#lifetimeMs);
    if (slot !== now && slot !== now - 1) return false;
    const mac = Buffer.from(nonce.slice(dot + 1), 'base64url');
    return mac.length === macBytes && timingSafeEqual(mac, this.#mac(slot));
  }

  #mac(slot: number): Buffer {
    return createHmac('sha256', this.#key).update(`dpop-nonce:${slot}`).digest().subarray(0, macBytes);
  }
}

/** Whether a client's proofs must carry a server nonce: its own `requireDPoPNonce`, else `dpop.requireNonce`. */
export function requiresDPoPNonce(client: RegisteredClient, config: DPoPConfig): boolean {
  return client.config.requireDPoPNonce ?? config.requireNonce;
}
