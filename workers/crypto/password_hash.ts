/**
 * User password hashing with scrypt (RFC 7914), stored as a PHC string:
 * `$scrypt$ln=15,r=8,p=1$<salt>$<hash>` (salt and hash in Base64 without padding).
 *
 * The cost parameters are read back from the stored string, so they can be raised for new hashes
 * without invalidating old ones.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

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
 * Hashes a user password for the `passwordHash` field of a configured user.
 *
 * @example
 * ```ts
 * const phc = await hashPassword('alice');
 * // '$scrypt$ln=15,r=8,p=1$…$…'
 * ```
 */
export async function hashPassword(password: string): Promise<string> {
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
  const parsed = parsePasswordHash(phc);
  if (parsed === undefined) return false;
  try {
    const candidate = await deriveKey(password, parsed.salt, parsed, parsed.hash.length);
    return timingSafeEqual(candidate, parsed.hash);
  } catch {
    return false;
  }
}

/** True when `phc` is a scrypt PHC string that {@link verifyPassword} can check. */
export function isPasswordHash(phc: string): boolean {
  return parsePasswordHash(phc) !== undefined;
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
