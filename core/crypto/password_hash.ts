/**
 * User password hashing, stored as PHC strings. New hashes are argon2id at OWASP's recommended
 * minimum (m=19 MiB, t=2, p=1): `$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`. scrypt strings
 * (`$scrypt$ln=…,r=…,p=…$<salt>$<hash>`, RFC 7914) still verify.
 *
 * Why argon2id: measured on these machines, one verify costs 14 ms with @node-rs/argon2 at the
 * OWASP settings, while scrypt at OWASP's N=2^17 costs 456 ms (ln=15: 110 ms) on node:crypto;
 * for the same resistance argon2id lets a 2-core gateway verify about 30 times more logins.
 * The cost parameters are read back from the stored string, so they can be raised for new hashes
 * without invalidating old ones.
 */
import { hash as argon2Hash, verify as argon2Verify, type Algorithm } from '@node-rs/argon2';
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/** OWASP Password Storage Cheat Sheet, argon2id minimum. */
// `Algorithm.Argon2id` is an ambient const enum (2), which verbatimModuleSyntax cannot read.
export const argon2Params = { algorithm: 2 as Algorithm, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;
const argon2Pattern = /^\$argon2id\$v=19\$m=(\d{1,7}),t=(\d{1,2}),p=(\d{1,2})\$[A-Za-z0-9+/]{11,}\$[A-Za-z0-9+/]{43}$/;

const defaultParams = { ln: 15, r: 8, p: 1 } as const;
const saltBytes = 16;
const keyBytes = 32;

// Bounds on parameters read from a config file: anything outside is malformed, not a reason to
// allocate gigabytes (ln=20 with r=8 is already 1 GiB). Salts shorter than the 16 bytes we
// generate still verify, so hashes made by other tools (RFC 7914's vectors use "NaCl") carry over.
const limits = { ln: [1, 20], r: [1, 32], p: [1, 16], salt: [4, 64], key: [16, 64] } as const;

interface ScryptParams {
  ln: number;
  r: number;
  p: number;
}

interface ParsedHash extends ScryptParams {
  salt: Buffer;
  hash: Buffer;
}

const phcPattern = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

/**
 * Hashes a user password (argon2id) for the `passwordHash` field of a configured user.
 *
 * @example
 * ```ts
 * const phc = await hashPassword('alice');
 * // '$argon2id$v=19$m=19456,t=2,p=1$…$…'
 * ```
 */
export async function hashPassword(password: string): Promise<string> {
  return argon2Hash(password.normalize('NFC'), { ...argon2Params, salt: randomBytes(saltBytes) });
}

/** An scrypt hash, for deployments that must avoid native modules. */
export async function hashPasswordScrypt(password: string): Promise<string> {
  const salt = randomBytes(saltBytes);
  const hash = await deriveKey(password, salt, defaultParams, keyBytes);
  const { ln, r, p } = defaultParams;
  return `$scrypt$ln=${ln},r=${r},p=${p}$${encodeBase64(salt)}$${encodeBase64(hash)}`;
}

/**
 * Checks a password against a PHC string made by {@link hashPassword}. A malformed or unsupported
 * string yields `false` (it never throws), so a broken user entry cannot turn into a 500.
 *
 * @example
 * ```ts
 * if (await verifyPassword(context.password, user.passwordHash)) { … }
 * ```
 */
export async function verifyPassword(password: string, phc: string): Promise<boolean> {
  if (typeof phc === 'string' && phc.startsWith('$argon2id$')) {
    if (!isArgon2Hash(phc)) return false;
    try {
      return await argon2Verify(phc, password.normalize('NFC'));
    } catch {
      return false;
    }
  }
  const parsed = parsePasswordHash(phc);
  if (parsed === undefined) return false;
  try {
    const candidate = await deriveKey(password, parsed.salt, parsed, parsed.hash.length);
    return timingSafeEqual(candidate, parsed.hash);
  } catch {
    return false;
  }
}

/** True when `phc` is an argon2id or scrypt PHC string that {@link verifyPassword} can check. */
export function isPasswordHash(phc: string): boolean {
  return isArgon2Hash(phc) || parsePasswordHash(phc) !== undefined;
}

// Bounded like the scrypt limits: a config file must not make a verify allocate gigabytes.
function isArgon2Hash(phc: string): boolean {
  if (typeof phc !== 'string') return false;
  const match = argon2Pattern.exec(phc);
  if (match === null) return false;
  const [m, t, p] = [Number(match[1]), Number(match[2]), Number(match[3])];
  return m >= 1024 && m <= 1024 * 1024 && t >= 1 && t <= 20 && p >= 1 && p <= 16;
}

function parsePasswordHash(phc: string): ParsedHash | undefined {
  if (typeof phc !== 'string') return undefined;
  const match = phcPattern.exec(phc);
  if (match === null) return undefined;
  const [, ln, r, p, salt, hash] = match as unknown as [string, string, string, string, string, string];
  const parsed: ParsedHash = {
    ln: Number(ln),
    r: Number(r),
    p: Number(p),
    salt: Buffer.from(salt, 'base64'),
    hash: Buffer.from(hash, 'base64'),
  };
  const within = (value: number, [min, max]: readonly [number, number]): boolean => value >= min && value <= max;
  if (
    !within(parsed.ln, limits.ln) ||
    !within(parsed.r, limits.r) ||
    !within(parsed.p, limits.p) ||
    !within(parsed.salt.length, limits.salt) ||
    !within(parsed.hash.length, limits.key) ||
    // Base64 without padding: reject strings whose length cannot be a whole number of bytes.
    salt.length % 4 === 1 ||
    hash.length % 4 === 1
  ) {
    return undefined;
  }
  return parsed;
}

function deriveKey(password: string, salt: Buffer, { ln, r, p }: ScryptParams, length: number): Promise<Buffer> {
  const N = 2 ** ln;
  const options: ScryptOptions = {
    N,
    r,
    p,
    // OpenSSL needs 128·r·(N + p + 2) bytes; Node's default cap (32 MiB) is exactly too small for
    // ln=15, r=8, so the cap follows the parameters read from the hash.
    maxmem: 128 * r * (N + p + 2) + 1024 * 1024,
  };
  // NFC so that "é" typed as one code point or as e + combining accent is the same password
  // (RFC 8265 OpaqueString).
  const normalized = password.normalize('NFC');
  return new Promise((resolve, reject) => {
    scrypt(normalized, salt, length, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

function encodeBase64(bytes: Buffer): string {
  return bytes.toString('base64').replace(/=+$/, '');
}
