import { createPrivateKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import { readOrMakeOnce } from './shared_file.js';
import { isSigningAlgorithm, type SigningAlgorithm, type SigningKeyMaterial } from '../../core/signing_key.js';

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

/** Reads one private JWK file and checks that it can sign with `signing.algorithm`. */
export async function readSigningKeyFile(file: string, defaultAlg: SigningAlgorithm): Promise<SigningKeyMaterial> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new KeyLoadError(`signing key ${file}: cannot read a JSON JWK (${(err as Error).message})`);
  }
  return parseSigningKey(text, file, defaultAlg);
}

/** A private JWK file's text, checked as {@link readSigningKeyFile} checks it. */
function parseSigningKey(text: string, file: string, defaultAlg: SigningAlgorithm): Promise<SigningKeyMaterial> {
  let jwk: JWK;
  try {
    jwk = JSON.parse(text) as JWK;
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
  // One algorithm per issuer: a key of another would sign tokens that clients configured for
  // signing.algorithm refuse, and ID token hashes (OIDC Core §3.1.3.6) depend on it.
  if (alg !== defaultAlg) throw new KeyLoadError(`${label}: its algorithm "${alg}" is not signing.algorithm "${defaultAlg}"`);
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

/** Reads every configured key file: each must have `signing.algorithm`, and no two share a kid. */
export async function readSigningKeyFiles(files: readonly string[], alg: SigningAlgorithm): Promise<SigningKeyMaterial[]> {
  const keys: SigningKeyMaterial[] = [];
  for (const file of files) keys.push(await readSigningKeyFile(file, alg));
  const kids = new Set(keys.map((k) => k.kid));
  if (kids.size !== keys.length) throw new KeyLoadError('signing keys: two keys share a kid');
  return keys;
}

/**
 * The development key on the memory store: generated once into `file` (under `.tessera/`,
 * git-ignored) and reused, so that tokens survive a restart. It is the first key of the store-kept
 * set (gateway/keys/store_key_source.ts).
 */
export function loadDevKeyFile(file: string, alg: SigningAlgorithm): Promise<SigningKeyMaterial> {
  return readOrMakeOnce(
    file,
    async () => {
      const key = await generateSigningKey(alg);
      return { value: key, text: `${JSON.stringify(key.jwk, null, 2)}\n` };
    },
    (text) => parseSigningKey(text, file, alg),
  );
}
