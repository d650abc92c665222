import { createHash, randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

/** A client's DPoP key pair, its public JWK and its RFC 7638 thumbprint. */
export interface DPoPKey {
  readonly alg: string;
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
  readonly privateJwk: JWK;
  readonly jkt: string;
}

export async function dpopKey(alg = 'ES256'): Promise<DPoPKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  return { alg, privateKey, publicJwk, privateJwk: await exportJWK(privateKey), jkt: await calculateJwkThumbprint(publicJwk, 'sha256') };
}

export interface ProofClaims {
  htm?: string;
  htu: string;
  /** Epoch seconds; default now. */
  iat?: number;
  jti?: string;
  nonce?: string;
  /** The access token the proof goes with: `ath` is its hash. */
  accessToken?: string;
  /** Header overrides (typ, jwk, alg). */
  header?: Record<string, unknown>;
}

/** A DPoP proof (RFC 9449 §4.2) signed by `key`, for `claims`. */
export async function dpopProof(key: DPoPKey, claims: ProofClaims): Promise<string> {
  const payload: Record<string, unknown> = {
    htm: claims.htm ?? 'POST',
    htu: claims.htu,
    iat: claims.iat ?? Math.floor(Date.now() / 1000),
    jti: claims.jti ?? randomUUID(),
  };
  if (claims.nonce !== undefined) payload.nonce = claims.nonce;
  if (claims.accessToken !== undefined) payload.ath = createHash('sha256').update(claims.accessToken).digest('base64url');
  return new SignJWT(payload)
    .setProtectedHeader({ alg: key.alg, typ: 'dpop+jwt', jwk: key.publicJwk, ...claims.header } as never)
    .sign(key.privateKey);
}

/** An unsigned JWT (`alg: none`) with a DPoP proof's shape. */
export function unsignedProof(key: DPoPKey, htu: string): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const payload = { htm: 'POST', htu, iat: Math.floor(Date.now() / 1000), jti: randomUUID() };
  return `${part({ alg: 'none', typ: 'dpop+jwt', jwk: key.publicJwk })}.${part(payload)}.`;
}
