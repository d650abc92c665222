import { generateKeyPairSync, type JsonWebKey } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { calculateJwkThumbprint, type JWK } from 'jose';

export type BenchAlgorithm = 'ES256' | 'RS256';

export interface BenchKey {
  alg: BenchAlgorithm;
  /** Private JWK with `kid` (its RFC 7638 thumbprint), `alg` and `use`. */
  jwk: JWK;
  /** Where it was written, for `signing.keys[].file`. */
  file: string;
}

/** A fresh signing key for the run, shared by Tessera and the peer so both sign alike. */
export async function writeBenchKey(dir: string, alg: BenchAlgorithm): Promise<BenchKey> {
  const { privateKey } =
    alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('rsa', { modulusLength: 2048 });
  const exported = privateKey.export({ format: 'jwk' }) as JsonWebKey as JWK;
  const kid = await calculateJwkThumbprint(exported);
  const jwk: JWK = { ...exported, kid, alg, use: 'sig' };
  const file = path.join(dir, `signing-${alg.toLowerCase()}.jwk.json`);
  writeFileSync(file, JSON.stringify(jwk), { mode: 0o600 });
  return { alg, jwk, file };
}
