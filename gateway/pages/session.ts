import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ClaimValue } from '../../workers/protocol/validator_api.js';

/** The signed-in user, as the session cookie carries it. */
export interface Session {
  readonly sub: string;
  /** Session id: the ID token's `sid`. */
  readonly sid: string;
  /** `auth_time`, `idp`, `amr`, `tenant`, … from the sign-in. */
  readonly claims: Readonly<Record<string, ClaimValue>>;
  /** Epoch ms. */
  readonly exp: number;
  /** What the pages call the user: the username they signed in with. */
  readonly displayName?: string;
}

export const sessionCookieName = 'tessera.session';
export const csrfCookieName = 'tessera.csrf';

/**
 * Signs and reads the session cookie and CSRF tokens with keys derived (HKDF) from the signing
 * key, so every gateway sharing the keys shares sessions, and no extra secret needs configuring.
 */
export class PageSecrets {
  private readonly sessionKey: Buffer;
  private readonly csrfKey: Buffer;

  constructor(
    keyMaterial: string,
    private readonly secureCookies: boolean,
    private readonly sessionLifetimeMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.sessionKey = Buffer.from(hkdfSync('sha256', keyMaterial, 'tessera', 'session cookie', 32));
    this.csrfKey = Buffer.from(hkdfSync('sha256', keyMaterial, 'tessera', 'csrf token', 32));
  }

  newSession(sub: string, claims: Session['claims'], displayName?: string): Session {
    const session: Session = { sub, sid: randomBytes(16).toString('base64url'), claims, exp: this.now() + this.sessionLifetimeMs };
    return displayName === undefined ? session : { ...session, displayName };
  }

  sessionCookie(session: Session): string {
    const payload = Buffer.from(JSON.stringify(session)).toString('base64url');
    return this.cookie(sessionCookieName, `${payload}.${mac(this.sessionKey, payload)}`, Math.ceil(this.sessionLifetimeMs / 1000));
  }

  readSession(cookieHeader: string): Session | undefined {
    const value = readCookie(cookieHeader, sessionCookieName);
    if (value === undefined) return undefined;
    const dot = value.indexOf('.');
    if (dot <= 0) return undefined;
    const payload = value.slice(0, dot);
    if (!sameText(value.slice(dot + 1), mac(this.sessionKey, payload))) return undefined;
    try {
      const session = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Session;
      return typeof session.sub === 'string' && typeof session.exp === 'number' && session.exp > this.now() ? session : undefined;
    } catch {
      return undefined;
    }
  }

  /** The CSRF token the cookie already holds, or a new one with the cookie that sets it. */
  csrfToken(cookieHeader: string): { token: string; cookie?: string } {
    const existing = readCookie(cookieHeader, csrfCookieName);
    if (existing !== undefined && this.isSignedCsrf(existing)) return { token: existing };
    const nonce = randomBytes(16).toString('base64url');
    const token = `${nonce}.${mac(this.csrfKey, nonce)}`;
    return { token, cookie: this.cookie(csrfCookieName, token, undefined) };
  }

  /** Double submit with a signed token: the form's value must equal the cookie's and be ours. */
  checkCsrf(cookieHeader: string, submitted: string | undefined): boolean {
    const fromCookie = readCookie(cookieHeader, csrfCookieName);
    return submitted !== undefined && fromCookie !== undefined && sameText(submitted, fromCookie) && this.isSignedCsrf(fromCookie);
  }

  private isSignedCsrf(token: string): boolean {
    const dot = token.indexOf('.');
    return dot > 0 && sameText(token.slice(dot + 1), mac(this.csrfKey, token.slice(0, dot)));
  }

  private cookie(name: string, value: string, maxAgeSeconds: number | undefined): string {
    const parts = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax'];
    if (maxAgeSeconds !== undefined) parts.push(`Max-Age=${maxAgeSeconds}`);
    if (this.secureCookies) parts.push('Secure');
    return parts.join('; ');
  }
}

function mac(key: Buffer, text: string): string {
  return createHmac('sha256', key).update(text).digest('base64url');
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** One cookie's value from a Cookie header; the first wins. */
export function readCookie(header: string, name: string): string | undefined {
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
