/**
 * The DPoP proof of a token request (RFC 9449 §5): verified in the worker before the grant runs,
 * and turned into the key thumbprint the grant binds its tokens to. The revocation endpoint's
 * proofs (revoking a bound refresh token) are checked the same way, for its own URL.
 */
import type { RegisteredClient } from '../../core/client_model.js';
import { OAuthError, OAuthErrors } from '../../core/oauth_errors.js';
import type { DPoPConfig } from '../../core/worker_config.js';
import { requiresDPoPNonce } from '../../core/dpop_nonce.js';
import { normalizeHtu, verifyDPoPProof, type DPoPProofServices } from './dpop_proof.js';

export class TokenRequestProofs {
  // The endpoint as discovery publishes it (docs/endpoints.md): what `htu` must name.
  readonly #htu: string;

  /** `path`: the endpoint the proofs are for: token, revocation, or pushed authorization request. */
  constructor(
    issuer: string,
    private readonly config: DPoPConfig,
    private readonly services: DPoPProofServices,
    path: '/connect/token' | '/connect/revocation' | '/connect/par' = '/connect/token',
  ) {
    this.#htu = normalizeHtu(`${issuer}${path}`);
  }

  /**
   * The RFC 7638 thumbprint of the proof's key.
   * @throws OAuthError `invalid_dpop_proof`, or `use_dpop_nonce` when the client needs a nonce and
   * the proof has none or a stale one (the gateway sends the current one in `DPoP-Nonce`).
   */
  async keyOf(proof: string, client: RegisteredClient): Promise<string> {
    const outcome = await verifyDPoPProof(
      proof,
      { htm: 'POST', htu: this.#htu, requireNonce: requiresDPoPNonce(client, this.config) },
      this.services,
    );
    if (outcome.ok) return outcome.jkt;
    if (outcome.nonce) throw new OAuthError(OAuthErrors.dpopNonceRequired);
    throw new OAuthError(OAuthErrors.dpopProofInvalid, { detail: `DPoP proof refused: ${outcome.reason}` });
  }
}
