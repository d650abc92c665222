/**
 * A minimal cookie-keeping browser for driving the login and consent pages over real HTTP:
 * follows nothing automatically, so tests see every status and Location.
 */
export class BrowserSession {
  private readonly cookies = new Map<string, string>();

  async get(url: string): Promise<PageResponse> {
    return this.send(url, { method: 'GET' });
  }

  /** Posts a form; `headers` adds what a browser would send along (an `Origin`, say). */
  async post(url: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<PageResponse> {
    return this.send(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(form).toString(),
    });
  }

  /** Sets a cookie as another page of the same site could (cookie tossing). */
  setCookie(name: string, value: string): void {
    this.cookies.set(name, value);
  }

  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  /** The `Cookie` header this browser sends now (raw-socket requests of the same browser). */
  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  forget(name: string): void {
    this.cookies.delete(name);
  }

  private async send(url: string, init: RequestInit): Promise<PageResponse> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = (pair ?? '').indexOf('=');
      if (eq > 0) this.cookies.set((pair as string).slice(0, eq).trim(), (pair as string).slice(eq + 1).trim());
    }
    return new PageResponse(res.status, res.headers, await res.text());
  }
}

export class PageResponse {
  constructor(
    readonly status: number,
    readonly headers: Headers,
    readonly body: string,
  ) {}

  /** The value of a hidden input, HTML entities decoded. */
  hidden(name: string): string {
    const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(this.body);
    if (match === null) throw new Error(`no hidden input ${name} in page:\n${this.body.slice(0, 500)}`);
    return decodeEntities(match[1] as string);
  }

  get location(): string | null {
    return this.headers.get('location');
  }
}

function decodeEntities(text: string): string {
  return text
    .replaceAll('&#x2F;', '/')
    .replaceAll('&#x3D;', '=')
    .replaceAll('&#x60;', '`')
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&');
}
