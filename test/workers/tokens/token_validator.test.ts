// The access token check (workers/tokens/token_validator.ts over workers/tokens/published_keys.ts,
// on node:crypto): forgeries, claims and keys, each compared with jose's verdict on the same token.
// The oracle below is the check as it was written with jose's `jwtVerify` before it moved to
// node:crypto; the two must agree on every token, in verdict and in reason, except where a case
// says why not.
import { createHmac, createPublicKey, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { createLocalJWKSet, jwtVerify, type JWTPayload } from 'jose';
import t from 'tap';
import { generateSigningKey } from '../../../gateway/keys/key_loader.js';
import { importPrivateKey, publicJwk, type SigningKeyMaterial } from '../../../core/signing_key.js';
import { MemoryStore } from '../../../core/store/memory_store.js';
import { JwtSigner } from '../../../workers/tokens/jwt_signer.js';
import { AccessTokenValidator, clockToleranceSeconds } from '../../../workers/tokens/token_validator.js';
import { revokedJtiKey } from '../../../core/records/family_revocation.js';

const issuer = 'https://tessera.test';
const nowMs = 1_800_000_000_500;
const now = Math.floor(nowMs / 1000);

const [current, retired, removed, rsa, ed] = await Promise.all([
  generateSigningKey('ES256'),
  generateSigningKey('ES256'),
  generateSigningKey('ES256'),
  generateSigningKey('RS256'),
  generateSigningKey('EdDSA'),
]);
const store = new MemoryStore();
t.teardown(() => store.close());

type Verdict = { ok: true; payload: JWTPayload } | { ok: false; reason: string };

/** The check as it was on jose (the commit before this file): the reference for every case. */
async function joseVerdict(token: string, keys: readonly SigningKeyMaterial[], checkTime: boolean): Promise<Verdict> {
  if (token.length === 0 || token.length > 16 * 1024) return { ok: false, reason: 'malformed token' };
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, createLocalJWKSet({ keys: keys.map(publicJwk) }), {
      issuer,
      typ: 'at+jwt',
      algorithms: [...new Set(keys.map((k) => k.alg))],
      clockTolerance: checkTime ? clockToleranceSeconds : Number.MAX_SAFE_INTEGER,
      currentDate: new Date(nowMs),
      requiredClaims: ['exp', 'iat', 'jti', 'sub', 'client_id'],
    }));
  } catch (err) {
    return { ok: false, reason: (err as { code?: string }).code ?? 'invalid token' };
  }
  if (checkTime && (payload.iat as number) > nowMs / 1000 + clockToleranceSeconds) return { ok: false, reason: 'iat in the future' };
  if ((await store.get(revokedJtiKey(payload.jti as string))) !== null) return { ok: false, reason: 'token revoked' };
  return { ok: true, payload };
}

function validatorFor(keys: readonly SigningKeyMaterial[]): AccessTokenValidator {
  return new AccessTokenValidator({ issuer, keys, store, now: () => nowMs });
}

const b64 = (value: unknown) =>
  (Buffer.isBuffer(value) ? value : Buffer.from(typeof value === 'string' ? value : JSON.stringify(value))).toString('base64url');

function claims(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const payload: Record<string, unknown> = {
    iss: issuer,
    nbf: now - 60,
    iat: now - 60,
    exp: now + 3600,
    aud: 'urn:api1',
    scope: 'api1',
    client_id: 'app',
    sub: 'sub-alice',
    jti: randomUUID(),
    ...overrides,
  };
  for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
  return payload;
}

/** Signs `header.payload` (already encoded) with a private key the way its algorithm wants. */
function signRaw(alg: string, input: string, key: KeyObject): string {
  const digest = alg === 'EdDSA' ? null : 'sha256';
  const options = alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' as const } : key;
  return sign(digest, Buffer.from(input), options).toString('base64url');
}

/** A compact JWS with exactly this header and payload (objects, or text to encode as is). */
function jws(header: unknown, payload: unknown, by: SigningKeyMaterial = current): string {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${signRaw(by.alg, input, importPrivateKey(by))}`;
}

const header = (by: SigningKeyMaterial = current, extra: Record<string, unknown> = {}) => ({
  alg: by.alg,
  typ: 'at+jwt',
  kid: by.kid,
  ...extra,
});
const token = (overrides: Record<string, unknown> = {}, by: SigningKeyMaterial = current) => jws(header(by), claims(overrides), by);
const signer = new JwtSigner(current);

function replacePart(compact: string, index: number, part: string): string {
  const parts = compact.split('.');
  parts[index] = part;
  return parts.join('.');
}

/** Flips one bit of the decoded bytes of a part, and encodes it again. */
function flipBit(compact: string, index: number, byte = 10): string {
  const bytes = Buffer.from(compact.split('.')[index] as string, 'base64url');
  bytes[byte % bytes.length] = (bytes[byte % bytes.length] as number) ^ 0x01;
  return replacePart(compact, index, bytes.toString('base64url'));
}

/** HS256 over `header.payload`, keyed with some form of our public key (the RFC 8725 §2.1 confusion). */
function hmacWithPublicKey(secret: string | Buffer): string {
  const input = `${b64({ alg: 'HS256', typ: 'at+jwt', kid: current.kid })}.${b64(claims())}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

const publicKey = createPublicKey(importPrivateKey(current));
const revokedJti = randomUUID();
await store.set(revokedJtiKey(revokedJti), true, 3_600_000);

interface Case {
  readonly name: string;
  readonly token: string;
  /** Our reason, or `ok`. */
  readonly expect: string;
  /** jose's code when it names the same refusal another way (the check that caught it differs). */
  readonly jose?: string;
  /** Published keys, when not current and retired. */
  readonly keys?: readonly SigningKeyMaterial[];
  readonly checkTime?: false;
}

const es256Keys = [current, retired];
const threeAlgorithms = [current, rsa, ed];
const valid = token();

const cases: Case[] = [
  // Tokens that hold.
  { name: 'a token the signer made', token: signer.sign(claims(), 'at+jwt'), expect: 'ok' },
  { name: 'a token of a retired key still published', token: token({}, retired), expect: 'ok' },
  { name: 'an RS256 token where RS256 keys are published', token: token({}, rsa), expect: 'ok', keys: threeAlgorithms },
  { name: 'an EdDSA token where EdDSA keys are published', token: token({}, ed), expect: 'ok', keys: threeAlgorithms },
  { name: 'typ in capitals', token: jws(header(current, { typ: 'AT+JWT' }), claims()), expect: 'ok' },
  { name: 'typ as the full media type', token: jws(header(current, { typ: 'application/at+jwt' }), claims()), expect: 'ok' },
  { name: 'no kid, the only key of its alg', token: jws({ alg: 'ES256', typ: 'at+jwt' }, claims()), expect: 'ok', keys: [current] },
  { name: 'no nbf', token: token({ nbf: undefined }), expect: 'ok' },
  { name: 'nbf within the tolerance', token: token({ nbf: now + clockToleranceSeconds }), expect: 'ok' },
  { name: 'exp within the tolerance', token: token({ exp: now - clockToleranceSeconds + 1 }), expect: 'ok' },
  { name: 'iat within the tolerance', token: token({ iat: now + clockToleranceSeconds }), expect: 'ok' },
  { name: 'an expired token when time is not checked', token: token({ exp: now - 86_400 }), expect: 'ok', checkTime: false },
  { name: 'iat in the future when time is not checked', token: token({ iat: now + 86_400 }), expect: 'ok', checkTime: false },
  {
    name: 'a DPoP-bound token, with array aud and extra claims',
    token: token({ cnf: { jkt: 'x' }, aud: ['a', 'b'], amr: ['pwd'] }),
    expect: 'ok',
  },
  {
    name: 'unknown header members',
    token: jws(header(current, { x5u: 'https://evil.test', jku: 'https://evil.test' }), claims()),
    expect: 'ok',
  },

  // No signature, or a symmetric one.
  {
    name: 'alg none, no signature',
    token: `${b64({ alg: 'none', typ: 'at+jwt', kid: current.kid })}.${b64(claims())}.`,
    expect: 'ERR_JOSE_ALG_NOT_ALLOWED',
  },
  { name: 'alg None', token: `${b64({ alg: 'None', typ: 'at+jwt' })}.${b64(claims())}.`, expect: 'ERR_JOSE_ALG_NOT_ALLOWED' },
  { name: 'alg none, two parts', token: `${b64({ alg: 'none' })}.${b64(claims())}`, expect: 'ERR_JWS_INVALID' },
  { name: 'no alg', token: jws({ typ: 'at+jwt', kid: current.kid }, claims()), expect: 'ERR_JWS_INVALID' },
  { name: 'alg not a string', token: jws({ alg: ['ES256'], typ: 'at+jwt', kid: current.kid }, claims()), expect: 'ERR_JWS_INVALID' },
  {
    name: 'HS256 keyed with the public JWK',
    token: hmacWithPublicKey(JSON.stringify(publicJwk(current))),
    expect: 'ERR_JOSE_ALG_NOT_ALLOWED',
  },
  {
    name: 'HS256 keyed with the public PEM',
    token: hmacWithPublicKey(publicKey.export({ format: 'pem', type: 'spki' }) as string),
    expect: 'ERR_JOSE_ALG_NOT_ALLOWED',
  },
  {
    name: 'HS256 keyed with the public DER',
    token: hmacWithPublicKey(publicKey.export({ format: 'der', type: 'spki' })),
    expect: 'ERR_JOSE_ALG_NOT_ALLOWED',
  },
  {
    name: 'HS256 where three algorithms are published',
    token: hmacWithPublicKey(JSON.stringify(publicJwk(current))),
    expect: 'ERR_JOSE_ALG_NOT_ALLOWED',
    keys: threeAlgorithms,
  },

  // Keys.
  {
    name: 'the kid of our key, signed by another key',
    token: jws(header(current), claims(), removed),
    expect: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
  },
  { name: 'a removed key', token: token({}, removed), expect: 'ERR_JWKS_NO_MATCHING_KEY' },
  { name: 'an unknown kid', token: jws(header(current, { kid: 'nope' }), claims()), expect: 'ERR_JWKS_NO_MATCHING_KEY' },
  { name: 'a kid that is not a string', token: jws(header(current, { kid: 1 }), claims()), expect: 'ERR_JWKS_NO_MATCHING_KEY' },
  { name: 'no kid, two keys of its alg', token: jws({ alg: 'ES256', typ: 'at+jwt' }, claims()), expect: 'ERR_JWKS_MULTIPLE_MATCHING_KEYS' },
  {
    name: 'RS256 with the kid of an ES256 key',
    token: jws({ alg: 'RS256', typ: 'at+jwt', kid: current.kid }, claims(), rsa),
    expect: 'ERR_JWKS_NO_MATCHING_KEY',
    keys: threeAlgorithms,
  },
  {
    name: 'ES256 with the kid of an RS256 key',
    token: jws({ alg: 'ES256', typ: 'at+jwt', kid: rsa.kid }, claims()),
    expect: 'ERR_JWKS_NO_MATCHING_KEY',
    keys: threeAlgorithms,
  },
  {
    name: 'EdDSA with the kid of an ES256 key',
    token: jws({ alg: 'EdDSA', typ: 'at+jwt', kid: current.kid }, claims(), ed),
    expect: 'ERR_JWKS_NO_MATCHING_KEY',
    keys: threeAlgorithms,
  },
  {
    name: 'an algorithm no published key has',
    token: jws({ alg: 'EdDSA', typ: 'at+jwt', kid: ed.kid }, claims(), ed),
    expect: 'ERR_JOSE_ALG_NOT_ALLOWED',
  },
  {
    name: 'Ed25519 for an EdDSA key',
    token: jws({ alg: 'Ed25519', typ: 'at+jwt', kid: ed.kid }, claims(), ed),
    expect: 'ERR_JOSE_ALG_NOT_ALLOWED',
    keys: threeAlgorithms,
  },
  {
    name: 'ES384 (an algorithm node:crypto would verify) with our kid',
    token: jws({ alg: 'ES384', typ: 'at+jwt', kid: current.kid }, claims()),
    expect: 'ERR_JOSE_ALG_NOT_ALLOWED',
  },

  // Tampering.
  {
    name: 'a tampered payload',
    token: replacePart(valid, 1, b64({ ...claims(), sub: 'sub-mallory' })),
    expect: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
  },
  { name: 'one bit of the payload', token: flipBit(valid, 1), expect: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' },
  {
    name: 'a tampered header',
    token: replacePart(valid, 0, b64(header(current, { typ: 'AT+jwt' }))),
    expect: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
  },
  { name: 'one bit of the signature', token: flipBit(valid, 2), expect: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' },
  {
    name: 'the signature of another token',
    token: replacePart(valid, 2, token().split('.')[2] as string),
    expect: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
  },
  {
    name: 'a signature of zeros (r = s = 0)',
    token: replacePart(valid, 2, Buffer.alloc(64).toString('base64url')),
    expect: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
  },
  { name: 'a truncated signature', token: valid.slice(0, -4), expect: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' },
  { name: 'a longer signature', token: `${valid}AAAA`, expect: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' },
  {
    name: 'a DER signature',
    token: replacePart(
      valid,
      2,
      sign('sha256', Buffer.from(valid.split('.').slice(0, 2).join('.')), importPrivateKey(current)).toString('base64url'),
    ),
    expect: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
  },
  { name: 'an empty signature', token: replacePart(valid, 2, ''), expect: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' },

  // typ.
  {
    name: 'an ID token (typ JWT)',
    token: jws(header(current, { typ: 'JWT' }), claims({ aud: 'app', nonce: 'n' })),
    expect: 'ERR_JWT_CLAIM_VALIDATION_FAILED',
  },
  { name: 'a DPoP proof type', token: jws(header(current, { typ: 'dpop+jwt' }), claims()), expect: 'ERR_JWT_CLAIM_VALIDATION_FAILED' },
  { name: 'no typ', token: jws({ alg: 'ES256', kid: current.kid }, claims()), expect: 'ERR_JWT_CLAIM_VALIDATION_FAILED' },
  { name: 'typ not a string', token: jws(header(current, { typ: ['at+jwt'] }), claims()), expect: 'ERR_JWT_CLAIM_VALIDATION_FAILED' },
  {
    name: 'typ of another top-level type',
    token: jws(header(current, { typ: 'text/at+jwt' }), claims()),
    expect: 'ERR_JWT_CLAIM_VALIDATION_FAILED',
  },

  // Claims.
  { name: 'another issuer', token: token({ iss: 'https://evil.test' }), expect: 'ERR_JWT_CLAIM_VALIDATION_FAILED' },
  { name: 'the issuer with a trailing slash', token: token({ iss: `${issuer}/` }), expect: 'ERR_JWT_CLAIM_VALIDATION_FAILED' },
  { name: 'the issuer in an array', token: token({ iss: [issuer] }), expect: 'ERR_JWT_CLAIM_VALIDATION_FAILED' },
  ...['iss', 'exp', 'iat', 'jti', 'sub', 'client_id'].map((claim) => ({
    name: `no ${claim}`,
    token: token({ [claim]: undefined }),
    expect: 'ERR_JWT_CLAIM_VALIDATION_FAILED',
  })),
  { name: 'expired', token: token({ exp: now - 3600 }), expect: 'ERR_JWT_EXPIRED' },
  { name: 'expired at the edge of the tolerance', token: token({ exp: now - clockToleranceSeconds }), expect: 'ERR_JWT_EXPIRED' },
  { name: 'nbf in the future', token: token({ nbf: now + clockToleranceSeconds + 1 }), expect: 'ERR_JWT_CLAIM_VALIDATION_FAILED' },
  { name: 'iat in the future', token: token({ iat: now + clockToleranceSeconds + 1 }), expect: 'iat in the future' },
  {
    name: 'nbf beyond any tolerance when time is not checked',
    token: token({ nbf: 1e300 }),
    expect: 'ERR_JWT_CLAIM_VALIDATION_FAILED',
    checkTime: false,
  },
  { name: 'exp as a string', token: token({ exp: String(now + 3600) }), expect: 'ERR_JWT_CLAIM_VALIDATION_FAILED' },
  { name: 'iat as a string', token: token({ iat: String(now) }), expect: 'ERR_JWT_CLAIM_VALIDATION_FAILED' },
  { name: 'nbf as null', token: token({ nbf: null }), expect: 'ERR_JWT_CLAIM_VALIDATION_FAILED' },
  { name: 'exp as null', token: token({ exp: null }), expect: 'ERR_JWT_CLAIM_VALIDATION_FAILED' },
  { name: 'a revoked jti', token: token({ jti: revokedJti }), expect: 'token revoked' },
  {
    name: 'a revoked jti, time not checked',
    token: token({ jti: revokedJti, exp: now - 86_400 }),
    expect: 'token revoked',
    checkTime: false,
  },

  // Payloads that are not a JSON object, signed with our key.
  { name: 'a payload that is not JSON', token: jws(header(), 'not json'), expect: 'ERR_JWT_INVALID' },
  { name: 'a payload that is a JSON array', token: jws(header(), [claims()]), expect: 'ERR_JWT_INVALID' },
  { name: 'a payload that is a JSON string', token: jws(header(), '"sub"'), expect: 'ERR_JWT_INVALID' },
  { name: 'a payload that is null', token: jws(header(), 'null'), expect: 'ERR_JWT_INVALID' },
  { name: 'an empty payload', token: jws(header(), ''), expect: 'ERR_JWT_INVALID' },
  {
    name: 'a payload that is not UTF-8',
    token: jws(header(), Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])),
    expect: 'ERR_JWT_INVALID',
  },

  // Headers that are not a JSON object.
  { name: 'a header that is not JSON', token: `${b64('{alg:ES256}')}.${b64(claims())}.${valid.split('.')[2]}`, expect: 'ERR_JWS_INVALID' },
  { name: 'a header that is a JSON array', token: jws([header()], claims()), expect: 'ERR_JWS_INVALID' },
  { name: 'an empty header', token: `.${b64(claims())}.${valid.split('.')[2]}`, expect: 'ERR_JWS_INVALID' },
  {
    name: 'a header that is not UTF-8',
    token: `${Buffer.from([0x7b, 0xff, 0x7d]).toString('base64url')}.${b64(claims())}.${valid.split('.')[2]}`,
    expect: 'ERR_JWS_INVALID',
  },
  { name: 'crit naming an extension', token: jws(header(current, { crit: ['exp'], exp: 1 }), claims()), expect: 'ERR_JOSE_NOT_SUPPORTED' },
  { name: 'crit empty', token: jws(header(current, { crit: [] }), claims()), expect: 'ERR_JOSE_NOT_SUPPORTED', jose: 'ERR_JWS_INVALID' },
  {
    name: 'crit not an array',
    token: jws(header(current, { crit: 'b64' }), claims()),
    expect: 'ERR_JOSE_NOT_SUPPORTED',
    jose: 'ERR_JWS_INVALID',
  },

  // Shapes and encodings.
  { name: 'empty', token: '', expect: 'malformed token' },
  { name: 'over 16 KiB', token: token({ pad: 'x'.repeat(16 * 1024) }), expect: 'malformed token' },
  { name: 'one part', token: b64(claims()), expect: 'ERR_JWS_INVALID' },
  { name: 'four parts', token: `${valid}.${valid.split('.')[2]}`, expect: 'ERR_JWS_INVALID' },
  { name: 'five parts (a JWE)', token: `${b64({ alg: 'dir', enc: 'A256GCM' })}..AAAA.AAAA.AAAA`, expect: 'ERR_JWS_INVALID' },
  { name: 'base64 "+" in the signature', token: `${valid.slice(0, -2)}+${valid.slice(-1)}`, expect: 'ERR_JWS_INVALID' },
  { name: 'base64 "/" in the header', token: `/${valid.slice(1)}`, expect: 'ERR_JWS_INVALID' },
  {
    name: 'a character outside base64 in the payload',
    token: replacePart(valid, 1, `${valid.split('.')[1]}!`),
    expect: 'ERR_JWS_INVALID',
    jose: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
  },
  { name: 'a non-ASCII payload part', token: replacePart(valid, 1, `${valid.split('.')[1]}é`), expect: 'ERR_JWS_INVALID' },
  { name: 'a character outside base64 in the signature', token: `${valid.slice(0, -1)}*`, expect: 'ERR_JWS_INVALID' },
];

/**
 * Where the two differ on purpose: each only for a token signed with one of our own keys or for
 * one the old check also refused, so no forgery is at stake.
 */
interface Difference extends Case {
  readonly joseSays: string;
  readonly why: string;
}
const differences: Difference[] = [
  {
    name: 'crit ["b64"] with b64 true',
    token: jws(header(current, { crit: ['b64'], b64: true }), claims()),
    expect: 'ERR_JOSE_NOT_SUPPORTED',
    joseSays: 'ok',
    why: 'we implement no JWS extension, so any crit is refused (RFC 7515 §4.1.11); our signer never writes one',
  },
  {
    name: 'a padded signature',
    token: `${valid}==`,
    expect: 'ERR_JWS_INVALID',
    joseSays: 'ok',
    why: 'base64url in a JWS has no padding (RFC 7515 §2); jose decodes with atob, which allows it',
  },
];

function verdictOf(outcome: Verdict): string {
  return outcome.ok ? 'ok' : outcome.reason;
}

t.test('every token gets the same verdict as from jose, for the same reason', async (t) => {
  for (const c of cases) {
    const keys = c.keys ?? es256Keys;
    const checkTime = c.checkTime !== false;
    const ours = await validatorFor(keys).verify(c.token, { checkTime });
    const theirs = await joseVerdict(c.token, keys, checkTime);
    t.equal(verdictOf(ours), c.expect, `${c.name}: ours`);
    t.equal(verdictOf(theirs), c.jose ?? c.expect, `${c.name}: jose's`);
    if (ours.ok && theirs.ok) t.same(ours.payload, theirs.payload, `${c.name}: the same payload`);
  }
});

t.test('where the two differ, ours refuses and jose is as noted', async (t) => {
  for (const c of differences) {
    t.equal(verdictOf(await validatorFor(es256Keys).verify(c.token)), c.expect, `${c.name}: ours (${c.why})`);
    t.equal(verdictOf(await joseVerdict(c.token, es256Keys, true)), c.joseSays, `${c.name}: jose's`);
  }
});

t.test('a retired key verifies while published; useKeys swaps the set, and a removed key no longer does', async (t) => {
  const validator = validatorFor([current, retired]);
  const byRetired = token({}, retired);
  const byCurrent = token();
  t.equal(verdictOf(await validator.verify(byRetired)), 'ok', 'retired, still published');
  validator.useKeys([current]);
  t.equal(verdictOf(await validator.verify(byRetired)), 'ERR_JWKS_NO_MATCHING_KEY', 'removed');
  t.equal(verdictOf(await validator.verify(byCurrent)), 'ok', 'the current key still');
  validator.useKeys([removed, current]);
  t.equal(verdictOf(await validator.verify(token({}, removed))), 'ok', 'a key published again');
});

t.test('validateAccessToken: invalid_token with the reason, or the claims', async (t) => {
  const validator = validatorFor(es256Keys);
  t.same(await validator.validateAccessToken(token({ iss: 'https://evil.test' })), {
    isError: true,
    error: 'invalid_token: ERR_JWT_CLAIM_VALIDATION_FAILED',
    claims: [],
  });
  t.same(await validator.validateAccessToken(flipBit(valid, 2)), {
    isError: true,
    error: 'invalid_token: ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
    claims: [],
  });
  const ok = await validator.validateAccessToken(token({ jti: 'j1', aud: ['a', 'b'], cnf: { jkt: 'k' } }));
  t.equal(ok.isError, false);
  t.ok(Object.isFrozen(ok) && Object.isFrozen(ok.claims), 'frozen');
  t.same(
    ok.claims.filter((c) => ['aud', 'jti', 'cnf'].includes(c.type)),
    [
      { type: 'aud', value: 'a' },
      { type: 'aud', value: 'b' },
      { type: 'jti', value: 'j1' },
      { type: 'cnf', value: '{"jkt":"k"}' },
    ],
  );
});

t.test('a store that cannot be read is an error, not a verdict', async (t) => {
  const failing = new Proxy(store, {
    get: (target, name, receiver) => (name === 'get' ? () => Promise.reject(new Error('store down')) : Reflect.get(target, name, receiver)),
  });
  const validator = new AccessTokenValidator({ issuer, keys: es256Keys, store: failing, now: () => nowMs });
  await t.rejects(validator.verify(valid), /store down/);
  t.equal(
    verdictOf(await validator.verify(flipBit(valid, 2))),
    'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
    'a forgery never reaches the store',
  );
});

// Keys the key loader would not load (RSA under 2048 bits) verify nothing, as with jose.
t.test('an RSA key under 2048 bits verifies nothing', async (t) => {
  const small = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey;
  const material: SigningKeyMaterial = { kid: 'small', alg: 'RS256', jwk: small.export({ format: 'jwk' }) as SigningKeyMaterial['jwk'] };
  const weak = jws({ alg: 'RS256', typ: 'at+jwt', kid: 'small' }, claims(), material);
  t.equal(verdictOf(await validatorFor([material]).verify(weak)), 'ERR_JWS_INVALID');
  t.not(verdictOf(await joseVerdict(weak, [material], true)), 'ok', 'jose refuses it too');
});
