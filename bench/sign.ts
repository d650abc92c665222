/**
 * ES256 signing per core: node:crypto `sign` with `dsaEncoding: 'ieee-p1363'` (what Tessera's
 * workers do, workers/tokens/jwt_signer.ts) against jose's `SignJWT` (WebCrypto), 2 s each.
 * The gateway's choice of node:crypto on the hot path cites these figures.
 *
 * Then verification of the same tokens: node:crypto `verify` against jose's `jwtVerify` over a
 * local JWK set, which is what workers/tokens/token_validator.ts runs for introspection,
 * revocation, delegation and token exchange.
 *
 *   npm run bench -- sign          (or: node --import tsx bench/sign.ts)
 */
import { createPublicKey, generateKeyPairSync, randomUUID, sign, verify, type JsonWebKey } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { calculateJwkThumbprint, createLocalJWKSet, importJWK, jwtVerify, SignJWT, type JWK } from 'jose';
import { JwtSigner } from '../workers/tokens/jwt_signer.js';
import type { SignCase, SignResults } from './report/results.js';

/** The case that is one bare ES256 signature: the signing share of the bound (report/throughput_bound.ts). */
export const bareSignCase = "node:crypto sign('sha256', ieee-p1363)";

/** The claims of a client_credentials access token, as the workers sign them. */
export function payloadAt(now: number): Record<string, unknown> {
  return {
    iss: 'http://127.0.0.1:5000',
    nbf: now,
    iat: now,
    exp: now + 3600,
    aud: 'urn:api1',
    scope: 'api1',
    client_id: 'm2m',
    sub: 'm2m',
    jti: randomUUID(),
  };
}

function finish(name: string, signatures: number, startedAt: number, cpuAt: NodeJS.CpuUsage): SignCase {
  const seconds = (performance.now() - startedAt) / 1000;
  const cpu = process.cpuUsage(cpuAt);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  return {
    name,
    signatures,
    seconds,
    perSecond: signatures / seconds,
    cpuSeconds,
    perCpuSecond: cpuSeconds > 0 ? signatures / cpuSeconds : 0,
  };
}

function measureSync(name: string, durationS: number, signOnce: () => void): SignCase {
  for (let i = 0; i < 200; i++) signOnce();
  const cpuAt = process.cpuUsage();
  const startedAt = performance.now();
  const until = startedAt + durationS * 1000;
  let signatures = 0;
  while (performance.now() < until) {
    for (let i = 0; i < 64; i++) signOnce();
    signatures += 64;
  }
  return finish(name, signatures, startedAt, cpuAt);
}

async function measureAsync(name: string, durationS: number, inFlight: number, signOnce: () => Promise<unknown>): Promise<SignCase> {
  for (let i = 0; i < 200; i++) await signOnce();
  const cpuAt = process.cpuUsage();
  const startedAt = performance.now();
  const until = startedAt + durationS * 1000;
  let signatures = 0;
  const loop = async (): Promise<void> => {
    while (performance.now() < until) {
      await signOnce();
      signatures++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, loop));
  return finish(name, signatures, startedAt, cpuAt);
}

export async function runSignBench(durationS = 2, log: (line: string) => void = console.log): Promise<SignResults> {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const exported = privateKey.export({ format: 'jwk' }) as JsonWebKey as JWK;
  const kid = await calculateJwkThumbprint(exported);
  const jwk: JWK = { ...exported, kid, alg: 'ES256' };
  const now = Math.floor(Date.now() / 1000);
  const header = Buffer.from(JSON.stringify({ alg: 'ES256', typ: 'at+jwt', kid })).toString('base64url');
  const signingInput = Buffer.from(`${header}.${Buffer.from(JSON.stringify(payloadAt(now))).toString('base64url')}`);
  const signOptions = { key: privateKey, dsaEncoding: 'ieee-p1363' as const };
  const signer = new JwtSigner({ kid, alg: 'ES256', jwk });
  const joseKey = await importJWK(jwk, 'ES256');

  const cases: SignCase[] = [];
  const verifyCases: SignCase[] = [];
  const into =
    (list: SignCase[]) =>
    async (next: () => SignCase | Promise<SignCase>): Promise<void> => {
      const result = await next();
      list.push(result);
      log(
        `  ${result.name.padEnd(52)} ${Math.round(result.perSecond).toLocaleString('en-US').padStart(8)}/s  ${Math.round(result.perCpuSecond).toLocaleString('en-US').padStart(8)}/CPU-s`,
      );
    };
  const run = into(cases);
  const runVerify = into(verifyCases);
  const joseSign = (): Promise<string> =>
    new SignJWT(payloadAt(now)).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid }).sign(joseKey);
  await run(() => measureSync(bareSignCase, durationS, () => sign('sha256', signingInput, signOptions)));
  await run(() => measureSync('node:crypto full JWT (workers JwtSigner.sign)', durationS, () => signer.sign(payloadAt(now), 'at+jwt')));
  await run(() => measureAsync('jose SignJWT (one at a time)', durationS, 1, joseSign));
  await run(() => measureAsync('jose SignJWT (64 in flight)', durationS, 64, joseSign));
  const nodeBest = cases[0]?.perCpuSecond ?? 0;
  const joseBest = Math.max(0, ...cases.filter((c) => c.name.startsWith('jose')).map((c) => c.perCpuSecond));

  // Verification of one of those tokens.
  const token = signer.sign(payloadAt(now), 'at+jwt');
  const [h, p, signature] = token.split('.') as [string, string, string];
  const input = Buffer.from(`${h}.${p}`);
  const signatureBytes = Buffer.from(signature, 'base64url');
  const publicKey = createPublicKey(privateKey);
  const verifyOptions = { key: publicKey, dsaEncoding: 'ieee-p1363' as const };
  const { d: _private, ...publicJwk } = jwk;
  const keySet = createLocalJWKSet({ keys: [publicJwk] });
  log('ES256 verification:');
  await runVerify(() =>
    measureSync("node:crypto verify('sha256', ieee-p1363)", durationS, () => {
      if (!verify('sha256', input, verifyOptions, signatureBytes)) throw new Error('signature does not verify');
    }),
  );
  const verifyWithJose = () => jwtVerify(token, keySet, { typ: 'at+jwt' });
  await runVerify(() => measureAsync('jose jwtVerify, local JWK set (one at a time)', durationS, 1, verifyWithJose));
  await runVerify(() => measureAsync('jose jwtVerify, local JWK set (64 in flight)', durationS, 64, verifyWithJose));
  const nodeVerify = verifyCases[0]?.perCpuSecond ?? 0;
  const joseVerify = Math.max(0, ...verifyCases.slice(1).map((c) => c.perCpuSecond));
  return {
    durationS,
    cases,
    nodeCryptoOverJose: joseBest > 0 ? nodeBest / joseBest : null,
    verifyCases,
    nodeCryptoVerifyOverJose: joseVerify > 0 ? nodeVerify / joseVerify : null,
  };
}

/** How many times faster node:crypto signs and verifies than jose's best, per CPU-second. */
export function formatSignRatios(results: SignResults): string[] {
  return [
    ...(results.nodeCryptoOverJose === null
      ? []
      : [`node:crypto sign: ${results.nodeCryptoOverJose.toFixed(1)}x jose SignJWT's best, per CPU-second`]),
    ...(results.nodeCryptoVerifyOverJose == null
      ? []
      : [`node:crypto verify: ${results.nodeCryptoVerifyOverJose.toFixed(1)}x jose jwtVerify's best, per CPU-second`]),
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log('ES256 signatures, 2 s each:');
  for (const line of formatSignRatios(await runSignBench())) console.log(line);
}
