import { hash, timingSafeEqual } from 'node:crypto';

/** RFC 7636 §4.1: 43 to 128 unreserved characters. */
const verifierPattern = /^[A-Za-z0-9\-._~]{43,128}$/;
/** A base64url SHA-256: 43 characters. */
const challengePattern = /^[A-Za-z0-9_-]{43}$/;

export function isValidCodeChallenge(challenge: string): boolean {
  return challengePattern.test(challenge);
}

/**
 * RFC 7636 §4.6 with S256: BASE64URL(SHA256(ASCII(code_verifier))) == code_challenge, compared as
 * text in constant time. As text, not as decoded bytes: the last of 43 base64url characters carries
 * two unused bits, so four different challenges decode to the same bytes.
 */
/**
 * The S256 challenge of a well-formed verifier (RFC 7636 §4.2), for a store that compares it with
 * the code's own (docs/storage.md, "One round trip per redemption"); `undefined` for a verifier
 * {@link verifyCodeVerifier} refuses whatever the challenge.
 */
export function codeChallengeOf(verifier: string): string | undefined {
  return verifierPattern.test(verifier) ? hash('sha256', verifier, 'base64url') : undefined;
}

export function verifyCodeVerifier(verifier: string, challenge: string): boolean {
  if (!verifierPattern.test(verifier) || !challengePattern.test(challenge)) return false;
  // The verifier is ASCII (the pattern above): its UTF-8 bytes are its ASCII bytes.
  const computed = hash('sha256', verifier, 'base64url');
  return timingSafeEqual(Buffer.from(computed, 'latin1'), Buffer.from(challenge, 'latin1'));
}
