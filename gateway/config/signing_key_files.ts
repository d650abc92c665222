/**
 * Signing key files, checked by `tessera check-config` (the gateway reads them itself at start,
 * gateway/keys/key_loader.ts).
 */
import { readFile } from 'node:fs/promises';
import { importJWK, type JWK } from 'jose';
import type { SigningAlgorithm } from '../../core/signing_key.js';
import type { ConfigProblem } from './config_error.js';
import { describeFsError } from './fs_error.js';
import { isPlainObject } from './plain_object.js';

const keyTypeByAlgorithm: Record<SigningAlgorithm, { kty: string; crv?: string }> = {
  ES256: { kty: 'EC', crv: 'P-256' },
  EdDSA: { kty: 'OKP', crv: 'Ed25519' },
  RS256: { kty: 'RSA' },
  PS256: { kty: 'RSA' },
};

/**
 * Checks that every `signing.keys[].file` exists and holds a private JWK usable for signing with
 * `signing.algorithm` (a key of another algorithm is refused, as the gateway refuses it).
 *
 * @example
 * ```ts
 * const problems = await checkSigningKeyFiles(config);
 * if (problems.length > 0) throw new ConfigError(problems);
 * ```
 */
export async function checkSigningKeyFiles(config: {
  readonly signing: { readonly algorithm?: SigningAlgorithm | undefined; readonly keys: readonly { readonly file: string }[] };
}): Promise<ConfigProblem[]> {
  const problems: ConfigProblem[] = [];
  for (const [i, key] of config.signing.keys.entries()) {
    const path = `signing.keys[${i}].file`;
    const problem = await checkSigningKeyFile(key.file, config.signing.algorithm);
    if (problem !== undefined) problems.push({ path, message: problem });
  }
  return problems;
}

async function checkSigningKeyFile(file: string, requiredAlgorithm: string | undefined): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    return `cannot read ${JSON.stringify(file)} (${describeFsError(error)})`;
  }
  let jwk: unknown;
  try {
    jwk = JSON.parse(text);
  } catch {
    return `${JSON.stringify(file)} is not JSON (expected a private JWK from "tessera keys generate")`;
  }
  if (!isPlainObject(jwk) || typeof jwk.kty !== 'string') return `${JSON.stringify(file)} is not a JWK`;
  if (typeof jwk.d !== 'string') return `${JSON.stringify(file)} holds a public key; a private JWK is needed to sign`;
  const algorithm = typeof jwk.alg === 'string' ? jwk.alg : requiredAlgorithm;
  if (requiredAlgorithm !== undefined && algorithm !== requiredAlgorithm) {
    return `the signing key's algorithm "${String(algorithm)}" does not match signing.algorithm "${requiredAlgorithm}"`;
  }
  if (algorithm === undefined) return `${JSON.stringify(file)} has no "alg"; add one so the key can be published`;
  const expected = keyTypeByAlgorithm[algorithm as keyof typeof keyTypeByAlgorithm];
  if (expected === undefined) return `unsupported algorithm "${algorithm}"`;
  if (jwk.kty !== expected.kty || (expected.crv !== undefined && jwk.crv !== expected.crv)) {
    return `a ${algorithm} key must be kty "${expected.kty}"${expected.crv ? ` with crv "${expected.crv}"` : ''}`;
  }
  try {
    await importJWK(jwk as JWK, algorithm);
  } catch (error) {
    return `${JSON.stringify(file)} is not a valid ${algorithm} key (${error instanceof Error ? error.message : String(error)})`;
  }
  return undefined;
}
