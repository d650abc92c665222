import { BrowserSession } from './browser_session.js';

/**
 * The user's side of the device flow (RFC 8628 §3.3) in a fresh browser: the code typed on
 * `/device`, `username` signs in, and the consent page answers `decision`. Returns the final
 * page's status; tests that look at each page step by step (test/e2e/device_code.test.ts) keep
 * their own.
 */
export async function decideDeviceCode(
  baseUrl: string,
  userCode: string,
  decision: 'allow' | 'deny',
  user: { username: string; password: string } = { username: 'alice', password: 'alice-pw' },
): Promise<number> {
  const browser = new BrowserSession();
  const entry = await browser.get(`${baseUrl}/device`);
  const login = await browser.post(`${baseUrl}/device`, { csrf_token: entry.hidden('csrf_token'), user_code: userCode });
  const consent = await browser.post(`${baseUrl}/device/login`, {
    csrf_token: login.hidden('csrf_token'),
    request: login.hidden('request'),
    ...user,
  });
  const done = await browser.post(`${baseUrl}/device/consent`, {
    csrf_token: consent.hidden('csrf_token'),
    request: consent.hidden('request'),
    decision,
  });
  return done.status;
}
