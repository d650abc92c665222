import { createHash, randomBytes } from 'node:crypto';
import { BrowserSession, type PageResponse } from './browser_session.js';
import { sha256Secret, type TestGateway } from './test_gateway.js';
import { basicAuthorization } from './basic_authorization.js';

/** The redirect URI the code-flow test clients register; nothing listens there. */
export const callbackUri = 'http://127.0.0.1:5002/callback';

/** A PKCE pair (RFC 7636 §4.1, §4.2): a 43-character verifier and its S256 challenge. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: s256(verifier) };
}

export function s256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/** A confidential client of the code flow, secret `secret`; `extra` overrides any field. */
export function codeFlowClient(clientId: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    clientId,
    clientSecrets: [{ value: sha256Secret('secret') }],
    allowedGrantTypes: ['authorization_code', 'refresh_token'],
    allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
    allowOfflineAccess: true,
    redirectUris: [callbackUri],
    ...extra,
  };
}

export interface TokenAnswer {
  status: number;
  headers: Headers;
  body: string;
}

/**
 * Drives `/connect/authorize` and its pages over HTTP like a browser would (cookies kept, no
 * redirect followed), so that tests see every status, header and Location.
 */
export class AuthorizeFlow<Gateway extends Pick<TestGateway, 'url' | 'tokenUrl'> = TestGateway> {
  readonly browser: BrowserSession;

  constructor(
    readonly gw: Gateway,
    browser?: BrowserSession,
  ) {
    this.browser = browser ?? new BrowserSession();
  }

  /** The authorization URL for `params`, in the given order (a duplicate stays a duplicate). */
  url(params: Record<string, string> | [string, string][]): string {
    const query = new URLSearchParams(Array.isArray(params) ? params : Object.entries(params)).toString();
    return `${this.gw.url}/connect/authorize?${query}`;
  }

  /** Standard parameters for a PKCE request of `clientId`, with `extra` on top. */
  params(clientId: string, challenge: string, extra: Record<string, string> = {}): Record<string, string> {
    return {
      client_id: clientId,
      redirect_uri: callbackUri,
      response_type: 'code',
      scope: 'openid api1 offline_access',
      state: 'st-123',
      nonce: 'n-456',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...extra,
    };
  }

  authorize(params: Record<string, string> | [string, string][]): Promise<PageResponse> {
    return this.browser.get(this.url(params));
  }

  /** Posts the login form of `page` (a login page). */
  login(page: PageResponse, username: string, password: string, override: Record<string, string> = {}): Promise<PageResponse> {
    return this.browser.post(`${this.gw.url}/connect/authorize/login`, {
      csrf_token: page.hidden('csrf_token'),
      request: page.hidden('request'),
      username,
      password,
      ...override,
    });
  }

  /** Posts the consent form of `page` (a consent page). */
  decide(page: PageResponse, decision: string, override: Record<string, string> = {}): Promise<PageResponse> {
    return this.browser.post(`${this.gw.url}/connect/authorize/consent`, {
      csrf_token: page.hidden('csrf_token'),
      interaction: page.hidden('interaction'),
      decision,
      ...override,
    });
  }

  /**
   * A code for `params`: signs in as alice when there is no session yet, allows, and returns the
   * authorization response's parameters. Throws when any step does not go as planned.
   */
  async code(
    params: Record<string, string> | [string, string][],
    user: { username: string; password: string } = { username: 'alice', password: 'alice-pw' },
  ): Promise<URLSearchParams> {
    let page = await this.authorize(params);
    if (page.body.includes('name="password"')) page = await this.login(page, user.username, user.password);
    if (page.status !== 200 || !page.body.includes('value="allow"'))
      throw new Error(`no consent page: ${page.status} ${page.body.slice(0, 400)}`);
    const answer = await this.decide(page, 'allow');
    const location = answer.location;
    if (answer.status !== 302 || location === null) throw new Error(`no redirect after consent: ${answer.status}`);
    const response = new URL(location).searchParams;
    if (response.get('code') === null) throw new Error(`no code in ${location}`);
    return response;
  }

  /** `POST /connect/token` with HTTP Basic (`secret`) unless `auth` says otherwise. */
  async token(params: Record<string, string>, auth: { clientId: string; secret?: string | undefined }): Promise<TokenAnswer> {
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    const body = new URLSearchParams(params);
    if (auth.secret !== undefined) headers.authorization = basicAuthorization(auth.clientId, auth.secret);
    else body.set('client_id', auth.clientId);
    const res = await fetch(this.gw.tokenUrl, { method: 'POST', headers, body: body.toString() });
    return { status: res.status, headers: res.headers, body: await res.text() };
  }

  /** `POST /connect/introspect` as a confidential client with the secret `secret`. */
  async introspect(token: string, clientId: string): Promise<unknown> {
    const res = await fetch(`${this.gw.url}/connect/introspect`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: basicAuthorization(clientId),
      },
      body: new URLSearchParams({ token }).toString(),
    });
    if (res.status !== 200) throw new Error(`introspection answered ${res.status}: ${await res.text()}`);
    return res.json();
  }
}
