import { signingKeyAt, type PublishedKeySet } from '../../core/key_set.js';
import type { KeySetCell } from '../../wire/key_set_cell.js';
import type { SigningKeyMaterial } from '../../core/signing_key.js';
import { StoreUnavailableError } from '../../core/store/store.js';
import { JwtSigner } from './jwt_signer.js';

/**
 * A worker's view of the signing keys: the signer of the key whose activation has come, and the
 * published keys for verification (docs/operations.md, "Signing keys and rotation"). Checked once
 * per batch: one atomic load, and one clock comparison against the next activation.
 */
export class SigningKeyRing {
  // Version 0, before the gateway's first write, is the empty set (wire/key_set_cell.ts).
  private version = 0;
  private set: PublishedKeySet = { keys: [], activations: [] };
  private readonly signers = new Map<string, JwtSigner>();
  private current: JwtSigner | undefined;
  private until = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly cell: KeySetCell,
    /** Told the published keys whenever they change (the token validator). */
    private readonly onPublished: (keys: readonly SigningKeyMaterial[]) => void,
  ) {
    this.refresh(Date.now());
  }

  /**
   * The signer for now, as of the last {@link refresh}. None yet when the gateway started before
   * the store could give it its store-kept keys (docs/operations.md, "Starting without the
   * store"): what would sign answers 503, like any request the store cannot serve.
   */
  get signer(): JwtSigner {
    if (this.current === undefined) throw new StoreUnavailableError('no signing key loaded from the store yet');
    return this.current;
  }

  /** Takes a new key set from the gateway, and the next key when its activation has come. */
  refresh(now: number): void {
    const changed = this.cell.readIfChanged(this.version);
    if (changed !== null) {
      this.version = changed.version;
      this.set = changed.set;
      this.until = Number.NEGATIVE_INFINITY;
      // Imported keys are kept while published: a rotation imports only the new one.
      const kids = new Set(changed.set.keys.map((k) => k.kid));
      for (const kid of this.signers.keys()) if (!kids.has(kid)) this.signers.delete(kid);
      this.onPublished(changed.set.keys);
    }
    if (now < this.until) return;
    // An empty set: the gateway has not loaded its keys yet; it publishes them when it has.
    if (this.set.activations.length === 0) return;
    const { kid, until } = signingKeyAt(this.set, now);
    this.until = until;
    let signer = this.signers.get(kid);
    if (signer === undefined) {
      const material = this.set.keys.find((k) => k.kid === kid);
      if (material === undefined) throw new Error(`key set names an unpublished signing key ${kid}`);
      signer = new JwtSigner(material);
      this.signers.set(kid, signer);
    }
    this.current = signer;
  }
}
