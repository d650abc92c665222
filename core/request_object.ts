/**
 * Request objects (RFC 9101, OpenID Connect Core §6.1) as both threads see them. The gateway
 * reads the claims and picks the client's candidate keys (as for a client assertion); the worker
 * verifies the signature and spends the `jti` (docs/architecture.md, "Client assertions": the
 * same split, for the same reason).
 */
import type { ClientAssertionAlgorithm } from './client_assertion.js';
import type { PublicJwkConfig } from './worker_config.js';

/** A request object whose claims the gateway checked, ready for the worker. */
export interface RequestObjectCheck {
  readonly jwt: string;
  readonly alg: ClientAssertionAlgorithm;
  /** The client's keys that may have signed it (by `kid` when the header names one). */
  readonly keys: readonly PublicJwkConfig[];
  /** Spent once when present (RFC 9101 §10.8 leaves it optional). */
  readonly jti: string | undefined;
  /** Epoch seconds: the `jti` is kept until then. */
  readonly exp: number;
}
