/**
 * The gateway's signing keys while it runs (docs/operations.md, "Signing keys and rotation"):
 * loaded from the configured key files or from the store, published to the JWKS and to every
 * worker thread (through a {@link KeySetCell}), and loaded again on a file change, on the store
 * poll, or on {@link KeyRing.reload} (SIGHUP), without a restart.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { signingKeyAt, type PublishedKeySet } from '../../core/key_set.js';
import { KeySetCell } from '../../wire/key_set_cell.js';
import type { SigningAlgorithm, SigningKeyMaterial } from '../../core/signing_key.js';
import { isStoreUnavailable, type Store } from '../../core/store/store.js';
import type { LoadedConfig } from '../config/load.js';
import { rotationPolicyOf } from '../config/signing_rotation.js';
import { buildJwksDocument } from '../endpoints/discovery.js';
import { generateSigningKey, loadDevKeyFile, readSigningKeyFiles } from './key_loader.js';
import { watchKeyFiles } from './key_file_watcher.js';
import { StoreKeySource } from './store_key_source.js';
import type { KeyEncryption } from './key_encryption.js';

/** Where a key set comes from: read again on every reload. */
interface KeySource {
  load(): Promise<PublishedKeySet>;
}

/** What a reload did: `ok: false` keeps the running set (the error is logged). */
export type KeyReloadResult =
  | { readonly ok: true; readonly changed: boolean; readonly kids: readonly string[] }
  | { readonly ok: false; readonly error: string; readonly kids: readonly string[] };

export interface KeyRingOptions {
  readonly config: LoadedConfig;
  readonly store: Store;
  readonly logger: Logger;
  /** Where the development key file lives on the memory store. */
  readonly devKeyDir: string;
  /** Seals store-kept private keys at rest (docs/security.md, "Keys at rest"); none by default. */
  readonly keyEncryption?: KeyEncryption;
  /** Watch key files (default true). */
  readonly watch?: boolean;
  /**
   * Told when another key starts signing on this gateway (a rotation's activation, a reload):
   * the `KeyRotated` audit event and the rotation count (docs/operations.md, "Events").
   */
  readonly onSigningKeyChange?: (kid: string) => void;
}

/**
 * How often store-kept keys are polled: every second (one small read), more often when the
 * propagation delay is short, so that a new key is published everywhere well before it signs.
 */
export function storePollMs(propagationMs: number): number {
  return Math.min(1000, Math.max(100, Math.floor(propagationMs / 4)));
}

export class KeyRing {
  readonly cell = KeySetCell.create();
  private current: PublishedKeySet = { keys: [], activations: [] };
  private fingerprint = '';
  private jwks = '{"keys":[]}';
  private reloading: Promise<KeyReloadResult> | undefined;
  /** The load that starts when the running one ends: every caller meanwhile gets its result. */
  private queued: Promise<KeyReloadResult> | undefined;
  private poll: NodeJS.Timeout | undefined;
  private stopWatching = (): void => {};
  private source: KeySource;
  private files: readonly string[];
  /** The last failure's message, so that a store outage logs once, not on every poll. */
  private failing: string | undefined;
  private stopped = false;
  /** The key that signed when last looked at, and the timer for the next activation. */
  private signer: string | undefined;
  private activation: NodeJS.Timeout | undefined;

  private constructor(private readonly options: KeyRingOptions) {
    this.files = options.config.signing.keys.map((k) => k.file);
    this.source = this.sourceOf(this.files);
  }

  /**
   * Loads the keys once and begins watching or polling. A failure here fails the start, but for
   * store-kept keys on a store that does not answer: the gateway then starts without keys and the
   * poll publishes them once the store answers (docs/operations.md, "Starting without the store").
   */
  static async open(options: KeyRingOptions): Promise<KeyRing> {
    const ring = new KeyRing(options);
    try {
      ring.publish(await ring.source.load());
    } catch (err) {
      if (!(ring.source instanceof StoreKeySource && isStoreUnavailable(err))) throw err;
      ring.failing = err instanceof Error ? err.message : String(err);
      options.logger.warn(
        { error: ring.failing },
        'the store does not answer: starting without signing keys; tokens are answered 503 until the store gives them',
      );
    }
    const first = ring.source instanceof StoreKeySource ? ring.source.firstKey : undefined;
    if (first === 'created' && options.config.store.type !== 'memory') {
      // A new deployment, or a Redis that lost its data while other gateways run: they write
      // their keys back and publish this one on their next poll (docs/operations.md, "When Redis
      // loses its data").
      options.logger.warn(
        { kid: ring.signingKid },
        'the store held no signing keys: created the first one; gateways already running publish it within a second',
      );
    } else if (first === 'adopted') {
      // Gateways starting together all find the store empty; one write wins and the others take it.
      options.logger.info(
        { kid: ring.signingKid },
        'the store held no signing keys; another gateway starting at the same moment stored its key first: adopted the existing one',
      );
    }
    if (ring.files.length === 0 && options.config.signing.rotation === undefined) {
      options.logger.warn(
        { signing: ring.current.keys.length > 0 ? ring.signingKid : undefined, store: options.config.store.type },
        'no signing.keys and no signing.rotation: one key generated by Tessera and kept in the store, never rotated on its own; see docs/operations.md "Signing keys and rotation"',
      );
    }
    if (ring.files.length > 0) {
      if (options.watch !== false) ring.stopWatching = watchKeyFiles(ring.files, () => void ring.reload(), options.logger);
    } else {
      const every = storePollMs(rotationPolicyOf(options.config).propagationMs);
      ring.poll = setInterval(() => void ring.reload(), every);
      ring.poll.unref();
    }
    return ring;
  }

  /** The published keys, in JWKS order, and their activations. */
  get set(): PublishedKeySet {
    return this.current;
  }

  /** The JWKS document as served. */
  get jwksBody(): string {
    return this.jwks;
  }

  /** The key that signs now. */
  get signingKid(): string {
    return signingKeyAt(this.current, Date.now()).kid;
  }

  /** When the key that signs now started signing (epoch ms); 0 for key files, which sign from the start. */
  get signingSince(): number {
    const now = Date.now();
    let since = 0;
    for (const activation of this.current.activations) if (activation.activatesAt <= now) since = activation.activatesAt;
    return since;
  }

  /**
   * Reads the keys again: the key files (with `config`, the list it names), or the store. A
   * failure keeps the running set and is logged with what failed. Never two loads at once.
   */
  reload(config?: LoadedConfig): Promise<KeyReloadResult> {
    if (config !== undefined) {
      const files = config.signing.keys.map((k) => k.file);
      if ((files.length === 0) !== (this.files.length === 0) || config.signing.algorithm !== this.options.config.signing.algorithm) {
        const error = 'switching between key files and store-kept keys, or the algorithm, needs a restart';
        this.options.logger.error({ error }, 'signing keys not reloaded');
        return Promise.resolve({ ok: false, error, kids: this.kids() });
      }
      if (files.join('\n') !== this.files.join('\n')) {
        this.files = files;
        this.source = this.sourceOf(files);
        if (this.options.watch !== false) {
          this.stopWatching();
          this.stopWatching = watchKeyFiles(files, () => void this.reload(), this.options.logger);
        }
      }
    }
    if (this.queued !== undefined) return this.queued;
    if (this.reloading === undefined) return this.startLoad();
    // The running load may have read the files before the caller's change: the caller is answered
    // by the next load, which reads them after it (a key file rewritten while a watcher's reload
    // ran was once answered with the old file's error).
    this.queued = this.reloading.then(() => {
      this.queued = undefined;
      return this.startLoad();
    });
    return this.queued;
  }

  private startLoad(): Promise<KeyReloadResult> {
    this.reloading = this.load().finally(() => {
      this.reloading = undefined;
    });
    return this.reloading;
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.poll);
    clearTimeout(this.activation);
    this.stopWatching();
  }

  private async load(): Promise<KeyReloadResult> {
    try {
      const changed = this.publish(await this.source.load());
      if (this.failing !== undefined) this.options.logger.info({ kids: this.kids() }, 'signing keys reloaded again');
      this.failing = undefined;
      return { ok: true, changed, kids: this.kids() };
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      // The message names the file and what is wrong with it, never key material. A poll cut
      // short by a stop (the store closed under it) is no failure.
      const level = error === this.failing || this.stopped ? 'debug' : 'error';
      this.options.logger[level]({ error, kids: this.kids() }, 'signing keys not reloaded; the running keys stay');
      this.failing = error;
      return { ok: false, error, kids: this.kids() };
    }
  }

  /** Makes `set` the published one everywhere when it differs; resolves whether it did. */
  private publish(set: PublishedKeySet): boolean {
    const fingerprint = JSON.stringify(set);
    if (fingerprint === this.fingerprint) return false;
    this.cell.write(set);
    this.jwks = buildJwksDocument(set.keys);
    const first = this.fingerprint === '';
    this.fingerprint = fingerprint;
    this.current = set;
    this.options.logger.info(
      { published: this.kids(), signing: this.signingKid, next: set.activations.filter((a) => a.activatesAt > Date.now()) },
      first ? 'signing keys loaded' : 'signing keys changed',
    );
    this.followSigner();
    return true;
  }

  /** Tells `onSigningKeyChange` when the signer differs from the last one seen, now or at the next activation. */
  private followSigner(): void {
    clearTimeout(this.activation);
    if (this.stopped) return;
    const { kid, until } = signingKeyAt(this.current, Date.now());
    if (this.signer !== undefined && kid !== this.signer) this.options.onSigningKeyChange?.(kid);
    this.signer = kid;
    if (Number.isFinite(until)) {
      // setTimeout takes at most 2^31-1 ms; a later activation is looked at again then.
      this.activation = setTimeout(() => this.followSigner(), Math.min(Math.max(0, until - Date.now()) + 5, 2 ** 31 - 1));
      this.activation.unref();
    }
  }

  private kids(): string[] {
    return this.current.keys.map((k) => k.kid);
  }

  private sourceOf(files: readonly string[]): KeySource {
    const { config, store, devKeyDir } = this.options;
    const alg = config.signing.algorithm;
    if (files.length > 0) {
      return {
        async load() {
          const keys = await readSigningKeyFiles(files, alg);
          // The first file signs; every file is published, in the configured order.
          return { keys, activations: [{ kid: (keys[0] as SigningKeyMaterial).kid, activatesAt: 0 }] };
        },
      };
    }
    return new StoreKeySource(
      store,
      alg,
      rotationPolicyOf(config),
      () => firstStoredKey(config, store, devKeyDir),
      undefined,
      this.options.keyEncryption,
    );
  }
}

/**
 * The key that starts an empty store-kept set. On the memory store: the development key file
 * under `.tessera/`, so that a restart keeps it. On Redis: the development key an earlier
 * version kept in the store, if there is one (an upgrade keeps its kid), else a new key.
 */
export async function firstStoredKey(
  config: LoadedConfig,
  store: Store,
  devKeyDir: string,
): Promise<{ key: SigningKeyMaterial; createdAt: number }> {
  const alg: SigningAlgorithm = config.signing.algorithm;
  if (config.store.type === 'memory') {
    const file = path.join(devKeyDir, `dev-signing-key-${alg}.jwk.json`);
    const key = await loadDevKeyFile(file, alg);
    return { key, createdAt: Math.floor((await stat(file)).mtimeMs) };
  }
  const earlier = await store.get<SigningKeyMaterial>({ kind: 'key', id: `dev-signing-key:${alg}` });
  return { key: earlier ?? (await generateSigningKey(alg)), createdAt: Date.now() };
}
