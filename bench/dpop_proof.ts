/**
 * DPoP proof verification per core (workers/dpop/dpop_proof.ts): what a token request with a
 * `DPoP` header costs a worker thread beyond the grant. Proofs are made first, then verified one
 * after another for 2 s per case: jose's `jwtVerify` with the embedded key (what the first version
 * ran), the node:crypto JWS check that replaced it (workers/dpop/proof_jws.ts), then the whole check
 * (claims, thumbprint, the `jti` write into a memory store). Redis adds one round trip for the
 * `jti`, which the worker awaits without using CPU.
 *
 *   node --import tsx bench/dpop_proof.ts
 */
import { randomUUID } from 'node:crypto';
import { EmbeddedJWK, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { verifyDPoPProof } from '../workers/dpop/dpop_proof.js';
import { verifyProofJws } from '../workers/dpop/proof_jws.js';
import { DPoPNonces } from '../core/dpop_nonce.js';
import { MemoryStore } from '../core/store/memory_store.js';

const htu = 'http://127.0.0.1:5000/connect/token';
const seconds = 2;

async function proofs(alg: string, count: number): Promise<string[]> {
  const { privateKey, publicKey } = await generateKeyPair(alg);
  const jwk = await exportJWK(publicKey);
  const now = Math.floor(Date.now() / 1000);
  return Promise.all(
    Array.from({ length: count }, () =>
      new SignJWT({ htm: 'POST', htu, iat: now, jti: randomUUID() }).setProtectedHeader({ alg, typ: 'dpop+jwt', jwk }).sign(privateKey),
    ),
  );
}

async function measure(name: string, all: string[], verify: (proof: string) => Promise<unknown>): Promise<void> {
  let i = 0;
  const cpuAt = process.cpuUsage();
  const started = performance.now();
  while (performance.now() - started < seconds * 1000 && i < all.length) await verify(all[i++] as string);
  const cpu = process.cpuUsage(cpuAt);
  console.log(`${name.padEnd(44)} ${((cpu.user + cpu.system) / i).toFixed(1).padStart(7)} µs CPU per proof (${i} proofs)`);
}

const store = new MemoryStore();
const services = { store, nonces: new DPoPNonces(new Uint8Array(32), 300), windowSeconds: 60, now: Date.now };
for (const alg of ['ES256', 'EdDSA']) {
  const made = await proofs(alg, 40_000);
  await measure(`${alg}: jose jwtVerify(EmbeddedJWK)`, made.slice(0, 20_000), (p) => jwtVerify(p, EmbeddedJWK, { typ: 'dpop+jwt' }));
  await measure(`${alg}: verifyProofJws (node:crypto)`, made.slice(0, 20_000), async (p) => {
    if (typeof verifyProofJws(p) === 'string') throw new Error('refused');
  });
  await measure(`${alg}: verifyDPoPProof (memory store)`, made.slice(20_000), async (p) => {
    const outcome = await verifyDPoPProof(p, { htm: 'POST', htu, requireNonce: false }, services);
    if (!outcome.ok) throw new Error(outcome.reason);
  });
}
await store.close?.();
