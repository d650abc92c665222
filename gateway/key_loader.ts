import { createPrivateKey } from 'node:crypto';
import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import type { Logger } from 'pino';
import type { Store } from '../workers/store/store.js';
import { isSigningAlgorithm, type SigningAlgorithm, type SigningKeyMaterial } from '../workers/protocol/signing_key.js';
import type { LoadedConfig } from './config/load.js';

/** Key type each algorithm needs (RFC 7518 §3, RFC 8037). */
const keyTypeOf: Record<SigningAlgorithm, readonly string[]> = {
  ES256: ['ec:prime256v1'],
  EdDSA: ['ed25519'],
  RS256: ['rsa'],
  PS256: ['rsa', 'rsa-pss'],
};

export class KeyLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyLoadError';
  }
}

/** Reads one private JWK file and checks that it can sign with its algorithm. */
export async function readSigningKeyFile(file: string, defaultAlg: SigningAlgorithm): Promise<SigningKeyMaterial> {
  let jwk: JWK;
  try {
    jwk = JSON.parse(await readFile(file, 'utf8')) as JWK;
  } catch (err) {
    throw new KeyLoadError(`signing key ${file}: cannot read a JSON JWK (${(err as Error).message})`);
  }
  return checkSigningKey(jwk, defaultAlg, `signing key ${file}`);
}

export async function checkSigningKey(jwk: JWK, defaultAlg: SigningAlgorithm, label: string): Promise<SigningKeyMaterial> {
  if (typeof jwk !== 'object' || jwk === null || typeof jwk.d !== 'string') {
    throw new KeyLoadError(`${label}: not a private JWK (no "d")`);
  }
  const alg = jwk.alg ?? defaultAlg;
  if (!isSigningAlgorithm(alg)) throw new KeyLoadError(`${label}: unsupported algorithm "${String(alg)}"`);
  let keyType: string;
  try {
    const key = createPrivateKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' });
    keyType = key.asymmetricKeyType === 'ec' ? `ec:${String(key.asymmetricKeyDetails?.namedCurve)}` : String(key.asymmetricKeyType);
  } catch (err) {
    throw new KeyLoadError(`${label}: invalid JWK (${(err as Error).message})`);
  }
  if (!keyTypeOf[alg].includes(keyType)) throw new KeyLoadError(`${label}: a ${keyType} key cannot sign ${alg}`);
  const kid = jwk.kid ?? (await calculateJwkThumbprint(jwk));
  return { kid, alg, jwk: { ...jwk, kid, alg } };
}

/** A new private JWK with `kid` = its RFC 7638 thumbprint. */
export async function generateSigningKey(alg: SigningAlgorithm): Promise<SigningKeyMaterial> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true, ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}) });
  const jwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(jwk);
  return { kid, alg, jwk: { ...jwk, kid, alg, use: 'sig' } };
}

const devKeyTtlMs = 365 * 24 * 3600 * 1000;

/**
 * The configured keys, or a development key: generated once and reused. On Redis it lives in the
 * store so that every gateway instance signs with the same key; on the memory store it is a file
 * under `.tessera/` in the working directory (git-ignored).
 */
export async function loadSigningKeys(
  config: LoadedConfig,
  store: Store,
  logger: Logger,
  devKeyDir = path.resolve('.tessera'),
): Promise<SigningKeyMaterial[]> {
  const alg = config.signing.algorithm;
  if (config.signing.keys.length > 0) {
    const keys: SigningKeyMaterial[] = [];
    for (const { file } of config.signing.keys) keys.push(await readSigningKeyFile(file, alg));
    const kids = new Set(keys.map((k) => k.kid));
    if (kids.size !== keys.length) throw new KeyLoadError('signing keys: two keys share a kid');
    return keys;
  }
  let key: SigningKeyMaterial;
  if (config.store.type === 'memory') {
    key = await loadDevKeyFile(path.join(devKeyDir, `dev-signing-key-${alg}.jwk.json`), alg);
    logger.warn(
      { kid: key.kid, file: path.join(devKeyDir, `dev-signing-key-${alg}.jwk.json`) },
      'no signing keys configured: using a development key; configure signing.keys for production',
    );
  } else {
    const candidate = await generateSigningKey(alg);
    const stored = await store.putIfAbsent<SigningKeyMaterial>({ kind: 'key', id: `dev-signing-key:${alg}` }, candidate, devKeyTtlMs);
    key = await checkSigningKey(stored.jwk, alg, 'development key in the store');
    logger.warn(
      { kid: key.kid },
      'no signing keys configured: using a development key shared through the store; configure signing.keys for production',
    );
  }
  return [key];
}

async function loadDevKeyFile(file: string, alg: SigningAlgorithm): Promise<SigningKeyMaterial> {
  if (await exists(file)) return readWhenComplete(file, alg);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const key = await generateSigningKey(alg);
  try {
    // `wx`: of several processes starting at once, one writes and the others read its key.
    await writeFile(file, `${JSON.stringify(key.jwk, null, 2)}\n`, { flag: 'wx', mode: 0o600 });
    return key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return readWhenComplete(file, alg);
  }
}

// Another process may have created the file but not finished writing it yet.
async function readWhenComplete(file: string, alg: SigningAlgorithm): Promise<SigningKeyMaterial> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await readSigningKeyFile(file, alg);
    } catch (err) {
      if (attempt >= 20) throw err;
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}
