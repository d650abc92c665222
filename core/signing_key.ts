/**
 * Signing key material as it crosses the thread boundary: the gateway loads (or generates) the
 * keys and publishes their public halves; every worker signs with the first.
 */
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import type { JWK } from 'jose';

/** The JWS algorithms Tessera signs with (`signing.algorithm` in the config). */
export const signingAlgorithms = ['ES256', 'EdDSA', 'RS256', 'PS256'] as const;

export type SigningAlgorithm = (typeof signingAlgorithms)[number];

/** A private signing key as it is configured, stored and handed to the workers. */
export interface SigningKeyMaterial {
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  /** Private JWK (contains `d`). Never logged, never published. */
  readonly jwk: JWK;
}

export function isSigningAlgorithm(value: unknown): value is SigningAlgorithm {
  return typeof value === 'string' && (signingAlgorithms as readonly string[]).includes(value);
}

export function importPrivateKey(material: SigningKeyMaterial): KeyObject {
  return createPrivateKey({ key: material.jwk as import('node:crypto').JsonWebKey, format: 'jwk' });
}

// Members of a JWK that are private for any key type (RFC 7518 §6).
const privateMembers = new Set(['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']);

/** The public half as a JWK for the JWKS document, with `kid`, `alg` and `use`. */
export function publicJwk(material: SigningKeyMaterial): JWK {
  const exported = createPublicKey(importPrivateKey(material)).export({ format: 'jwk' });
  const jwk: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(exported)) if (!privateMembers.has(name)) jwk[name] = value;
  return { ...(jwk as JWK), kid: material.kid, alg: material.alg, use: 'sig' };
}
