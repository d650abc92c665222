import { createHash, timingSafeEqual } from 'node:crypto';

/** RFC 7636 §4.1: 43 to 128 unreserved characters. */
const verifierPattern = /^[A-Za-z0-9\-._~]{43,128}$/;
/** A base64url SHA-256: 43 characters. */
const challengePattern = /^[A-Za-z0-9_-]{43}$/;

export function isValidCodeChallenge(challenge: string): boolean {
  return challengePattern.test(challenge);
}

/** RFC 7636 §4.6 with S256, compared in constant time. */
export function verifyCodeVerifier(verifier: string, challenge: string): boolean {
  if (!verifierPattern.test(verifier) || !challengePattern.test(challenge)) return false;
  const computed = createHash('sha256').update(verifier, 'ascii').digest();
  return timingSafeEqual(computed, Buffer.from(challenge, 'base64url'));
}
