/**
 * The signing keys as every thread sees them at one moment: what the JWKS publishes and when each
 * key starts signing (docs/operations.md, "Signing keys and rotation"). The gateway builds it
 * from key files or from the store; the workers sign and verify with it.
 */
import type { SigningKeyMaterial } from './signing_key.js';

/** From `activatesAt` (epoch ms) on, `kid` signs, until a later activation. */
export interface KeyActivation {
  readonly kid: string;
  readonly activatesAt: number;
}

export interface PublishedKeySet {
  /** Every published key, in JWKS order (the same on every gateway). Private: the workers sign. */
  readonly keys: readonly SigningKeyMaterial[];
  /** Ascending by `activatesAt`; each names a key of `keys`. The first always signs when none has come. */
  readonly activations: readonly KeyActivation[];
}

/** The key that signs at `now`, and when that may change (`Infinity`: not before the set changes). */
export function signingKeyAt(set: PublishedKeySet, now: number): { kid: string; until: number } {
  const first = set.activations[0];
  if (first === undefined) throw new Error('a key set without an activation cannot sign');
  let kid = first.kid;
  for (const activation of set.activations) {
    if (activation.activatesAt > now) return { kid, until: activation.activatesAt };
    kid = activation.kid;
  }
  return { kid, until: Number.POSITIVE_INFINITY };
}
