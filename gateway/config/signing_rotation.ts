/**
 * `signing.rotation` as the key ring uses it, with its defaults, and the rules that keep a
 * rotation from breaking tokens (docs/operations.md, "Signing keys and rotation").
 */
import type { ConfigProblem } from './config_error.js';
import type { TesseraConfig } from './schema.js';

/** The timing of store-kept keys, in milliseconds. */
export interface RotationPolicy {
  /** How long each key signs before the next takes over; `null`: only `tessera keys rotate`. */
  readonly everyMs: number | null;
  /** How long a new key is published before it signs. */
  readonly propagationMs: number;
  /** How long a retired key stays published after the next one took over. */
  readonly retentionMs: number;
}

/** The longest lifetime of a JWT this issuer signs: access and ID tokens (refresh tokens are opaque). */
export function longestTokenLifetimeSeconds(config: Pick<TesseraConfig, 'clients'>): number {
  let longest = 0;
  for (const client of config.clients) longest = Math.max(longest, client.accessTokenLifetime, client.identityTokenLifetime);
  return longest;
}

export function rotationPolicyOf(config: Pick<TesseraConfig, 'clients' | 'signing'>): RotationPolicy {
  const rotation = config.signing.rotation;
  return {
    everyMs: rotation === undefined ? null : rotation.every * 1000,
    propagationMs: (rotation?.propagation ?? config.signing.jwksMaxAgeSeconds) * 1000,
    retentionMs: (rotation?.retention ?? longestTokenLifetimeSeconds(config)) * 1000,
  };
}

/**
 * A key that signs before caches saw it, or leaves the JWKS while tokens it signed are still
 * valid, fails verification at resource servers: refuse such a config rather than run it.
 */
export function checkSigningRotation(config: Pick<TesseraConfig, 'clients' | 'signing'>): ConfigProblem[] {
  const rotation = config.signing.rotation;
  if (rotation === undefined) return [];
  const problems: ConfigProblem[] = [];
  if (config.signing.keys.length > 0) {
    problems.push({
      path: 'signing.rotation',
      message: 'applies to keys kept in the store; with signing.keys, rotate by editing the key files and reloading',
    });
  }
  const policy = rotationPolicyOf(config);
  const maxAge = config.signing.jwksMaxAgeSeconds;
  if (policy.propagationMs < maxAge * 1000) {
    problems.push({
      path: 'signing.rotation.propagation',
      message: `must be at least signing.jwksMaxAgeSeconds (${maxAge} s): caches could still hold a JWKS without the new key`,
    });
  }
  const longest = longestTokenLifetimeSeconds(config);
  if (policy.retentionMs < longest * 1000) {
    problems.push({
      path: 'signing.rotation.retention',
      message: `must be at least the longest token lifetime (${longest} s): a retired key must verify every token it signed`,
    });
  }
  if (policy.everyMs !== null && policy.everyMs <= policy.propagationMs) {
    problems.push({ path: 'signing.rotation.every', message: 'must be longer than signing.rotation.propagation' });
  }
  return problems;
}
