/**
 * What one signature and one verification cost on this machine, per algorithm: the crypto parts of
 * a request's floor (scenarios/floor.ts), CPU µs on one thread of the bench process.
 */
import { createPublicKey, generateKeyPairSync, sign, verify, type JsonWebKey, type VerifyKeyObjectInput } from 'node:crypto';
import type { JWK } from 'jose';
import { JwtSigner } from '../../workers/tokens/jwt_signer.js';
import type { CryptoCost } from '../report/results.js';
import { payloadAt } from '../sign.js';
import { cpuMicroseconds } from './cpu_microseconds.js';
import type { BenchAlgorithm } from './keys.js';

/** Each figure over `ms` of CPU: a full JWT signed (`JwtSigner`), the signature alone, and a JWS verified. */
export function measureCryptoCost(alg: BenchAlgorithm, ms = 500): CryptoCost {
  const { privateKey } =
    alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...(privateKey.export({ format: 'jwk' }) as JsonWebKey as JWK), kid: 'floor', alg };
  const signer = new JwtSigner({ kid: 'floor', alg, jwk });
  const claims = payloadAt(Math.floor(Date.now() / 1000));
  const token = signer.sign(claims, 'at+jwt');
  const dot = token.lastIndexOf('.');
  const input = Buffer.from(token.slice(0, dot));
  const publicKey = createPublicKey(privateKey);
  // JWS ES256 is R||S (RFC 7518 §3.4), RS256 PKCS#1 v1.5.
  const verifyKey: VerifyKeyObjectInput = alg === 'ES256' ? { key: publicKey, dsaEncoding: 'ieee-p1363' } : { key: publicKey };
  const signKey = alg === 'ES256' ? { key: privateKey, dsaEncoding: 'ieee-p1363' as const } : privateKey;
  return {
    alg,
    jwtSignUs: cpuMicroseconds(() => signer.sign(claims, 'at+jwt'), ms),
    signUs: cpuMicroseconds(() => sign('sha256', input, signKey), ms),
    verifyUs: cpuMicroseconds(() => {
      const signature = Buffer.from(token.slice(dot + 1), 'base64url');
      if (!verify('sha256', input, verifyKey, signature)) throw new Error(`${alg}: the token does not verify`);
    }, ms),
  };
}
