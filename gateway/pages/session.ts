import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ClaimValue } from '../../core/validator_api.js';

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
 * On an https issuer the cookies carry the `__Host-` prefix: a browser accepts such a cookie only
 * from the host itself (Secure, `Path=/`, no `Domain`), so a sibling subdomain or another port
 * cannot toss one in (RFC 6265bis §4.1.3.2; docs/security.md).
 */
const hostPrefix = '__Host-';

/**
 * Signs and reads the session cookie and CSRF tokens with keys derived (HKDF) from the pages' own
 * secret (gateway/keys/page_secret.ts), which every gateway of one issuer shares, so they share
 * sessions; a signing key rotation does not touch it.
 */
export class PageSecrets {
  private readonly sessionKey: Buffer;
  private readonly csrfKey: Buffer;
  private readonly formKey: Buffer;
  readonly sessionCookieName: string;
  readonly csrfCookieName: string;

  constructor(
    keyMaterial: string,
    /** The issuer's origin: the only one a form may be posted from. */
    private readonly issuerOrigin: string,
    private readonly secureCookies: boolean,
    private readonly sessionLifetimeMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.sessionKey = Buffer.from(hkdfSync('sha256', keyMaterial, 'tessera', 'session cookie', 32));
    this.csrfKey = Buffer.from(hkdfSync('sha256', keyMaterial, 'tessera', 'csrf token', 32));
    this.formKey = Buffer.from(hkdfSync('sha256', keyMaterial, 'tessera', 'signed form value', 32));
    this.sessionCookieName = secureCookies ? `${hostPrefix}${sessionCookieName}` : sessionCookieName;
    this.csrfCookieName = secureCookies ? `${hostPrefix}${csrfCookieName}` : csrfCookieName;
  }

  newSession(sub: string, claims: Session['claims'], displayName?: string): Session {
    const session: Session = { sub, sid: randomBytes(16).toString('base64url'), claims, exp: this.now() + this.sessionLifetimeMs };
    return displayName === undefined ? session : { ...session, displayName };
  }

  sessionCookie(session: Session): string {
    return this.cookie(this.sessionCookieName, sealValue(this.sessionKey, session), Math.ceil(this.sessionLifetimeMs / 1000));
  }

  readSession(cookieHeader: string): Session | undefined {
    const value = readCookie(cookieHeader, this.sessionCookieName);
    if (value === undefined) return undefined;
    const session = openValue(this.sessionKey, value) as Partial<Session> | null | undefined;
    return typeof session?.sub === 'string' && typeof session.exp === 'number' && session.exp > this.now()
      ? (session as Session)
      : undefined;
  }

  /**
   * A value the server puts in a form and must get back unchanged (the consent interaction,
   * gateway/pages/consent_interaction.ts): JSON, base64url, HMAC-signed with a key of its own.
   */
  signFormValue(value: object): string {
    return sealValue(this.formKey, value);
  }

  /** The value {@link signFormValue} signed, or `undefined` when the text is not one it made. */
  readFormValue(text: string | undefined): unknown {
    return text === undefined ? undefined : openValue(this.formKey, text);
  }

  /** Deletes the session cookie: the browser is signed out (RFC 6265 §3.1, an expiry in the past). */
  endSessionCookie(): string {
    return this.cookie(this.sessionCookieName, '', 0);
  }

  /**
   * The CSRF token of a form, bound to this browser and to its session: the browser's signed
   * id (the CSRF cookie; set by the returned `cookie` when missing) and the session's `sid` (none
   * when signed out). `session` is the session the answer establishes, when it sets a new one;
   * otherwise the one the browser's cookie holds. A token from another browser, or minted for
   * another session or for no session, fails {@link checkCsrf} (docs/security.md).
   */
  csrfToken(cookieHeader: string, session?: Session): { token: string; cookie?: string } {
    let browser = this.browserId(cookieHeader);
    let cookie: string | undefined;
    if (browser === undefined) {
      const nonce = randomBytes(16).toString('base64url');
      browser = nonce;
      cookie = this.cookie(this.csrfCookieName, `${nonce}.${mac(this.csrfKey, `browser\u0000${nonce}`)}`, undefined);
    }
    const sid = (session ?? this.readSession(cookieHeader))?.sid ?? '';
    const token = this.formToken(browser, sid);
    return cookie === undefined ? { token } : { token, cookie };
  }

  /**
   * Whether a form was posted from the issuer's own pages: an `Origin` header, when the browser
   * sends one (every current browser does on POST), names the issuer's origin, and the token was
   * made for this browser and its current session. The origin check stops a page on a sibling
   * subdomain or another port, which is same-site and so gets `SameSite=Lax` cookies sent along.
   */
  checkCsrf(page: { readonly cookies: string; readonly origin: string }, submitted: string | undefined): boolean {
    // `null` (a sandboxed frame, a page under no-referrer) is an origin that is not ours.
    if (page.origin !== '' && page.origin !== this.issuerOrigin) return false;
    const cookieHeader = page.cookies;
    const browser = this.browserId(cookieHeader);
    if (submitted === undefined || browser === undefined) return false;
    const sid = this.readSession(cookieHeader)?.sid ?? '';
    return sameText(submitted, this.formToken(browser, sid));
  }

  /** The browser id a signed CSRF cookie holds. */
  private browserId(cookieHeader: string): string | undefined {
    const value = readCookie(cookieHeader, this.csrfCookieName);
    if (value === undefined) return undefined;
    const dot = value.indexOf('.');
    if (dot <= 0) return undefined;
    const nonce = value.slice(0, dot);
    return sameText(value.slice(dot + 1), mac(this.csrfKey, `browser\u0000${nonce}`)) ? nonce : undefined;
  }

  private formToken(browser: string, sid: string): string {
    return mac(this.csrfKey, `form\u0000${browser}\u0000${sid}`);
  }

  private cookie(name: string, value: string, maxAgeSeconds: number | undefined): string {
    const parts = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax'];
    if (maxAgeSeconds !== undefined) parts.push(`Max-Age=${maxAgeSeconds}`);
    if (this.secureCookies) parts.push('Secure');
    return parts.join('; ');
  }
}

/** `value` as the session cookie and signed form values carry it: JSON, base64url, `.`, its HMAC under `key`. */
function sealValue(key: Buffer, value: object): string {
  const payload = Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${payload}.${mac(key, payload)}`;
}

/** The value {@link sealValue} sealed under `key`, or `undefined` when `text` is not one it made. */
function openValue(key: Buffer, text: string): unknown {
  const dot = text.indexOf('.');
  if (dot <= 0) return undefined;
  const payload = text.slice(0, dot);
  if (!sameText(text.slice(dot + 1), mac(key, payload))) return undefined;
  try {
    return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown;
  } catch {
    return undefined;
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
