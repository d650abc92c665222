// The device flow end to end (RFC 8628): real gateways on the memory store and on a private
// redis-server, including two gateways sharing it, openid-client on the device side and the
// /device page over HTTP on the user side. Polling races are released at once on raw sockets.
import t, { type Test } from 'tap';
import * as oidc from 'openid-client';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { startTestGateway, type TestGateway } from '../helpers/test_gateway.js';
import { addPasswordFixtures, passwordFixtures } from '../helpers/password_users.js';
import { BrowserSession } from '../helpers/browser_session.js';
import { startRedisServer } from '../helpers/redis_server.js';
import { formPost, releaseAtOnce } from '../helpers/release_at_once.js';

const deviceGrant = 'urn:ietf:params:oauth:grant-type:device_code';
const fixtures = await passwordFixtures();

const bodies = {
  pending: { error: 'authorization_pending', error_description: 'The user has not finished yet.' },
  slowDown: { error: 'slow_down', error_description: 'Polling too fast: wait longer between requests.' },
  denied: { error: 'access_denied', error_description: 'The user denied the request.' },
  expired: { error: 'expired_token', error_description: 'The device code has expired.' },
  invalidGrant: { error: 'invalid_grant', error_description: 'The device code is invalid or already used.' },
  missing: { error: 'invalid_request', error_description: 'The device_code parameter is missing.' },
} as const;

function patchFor(store: Record<string, unknown>) {
  return (raw: Record<string, unknown>) => {
    addPasswordFixtures(raw, fixtures);
    raw.store = store;
    const deviceClient = (clientId: string, extra: Record<string, unknown> = {}) => ({
      clientId,
      clientName: 'Living-room TV',
      requireClientSecret: false,
      allowedGrantTypes: [deviceGrant, 'refresh_token'],
      allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
      allowOfflineAccess: true,
      pollingInterval: 1,
      ...extra,
    });
    (raw.clients as unknown[]).push(deviceClient('tv'), deviceClient('tv-other'), deviceClient('tv-short', { deviceCodeLifetime: 1 }));
  };
}

// Gateways take seconds to boot on a loaded machine: all three start at once, once per file.
const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);
const redisStore = { type: 'redis', url: redis.url };
const [memoryGateway, redisA, redisB] = await Promise.all([
  startTestGateway(t, { patch: patchFor({ type: 'memory' }) }),
  startTestGateway(t, { patch: patchFor(redisStore) }),
  startTestGateway(t, { patch: patchFor(redisStore) }),
]);

interface DeviceAuthorization {
  device_code: string;
  user_code: string;
}

interface Poll {
  status: number;
  cacheControl: string | null;
  body: Record<string, unknown>;
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function authorize(gw: TestGateway, clientId = 'tv', scope = 'openid api1 offline_access'): Promise<DeviceAuthorization> {
  const res = await fetch(`${gw.url}/connect/deviceauthorization`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: clientId, scope }).toString(),
  });
  if (res.status !== 200) throw new Error(`device authorization failed: ${await res.text()}`);
  return (await res.json()) as DeviceAuthorization;
}

async function poll(gw: TestGateway, params: Record<string, string>): Promise<Poll> {
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: deviceGrant, ...params }).toString(),
  });
  return { status: res.status, cacheControl: res.headers.get('cache-control'), body: (await res.json()) as Record<string, unknown> };
}

const pollCode = (gw: TestGateway, device: DeviceAuthorization, clientId = 'tv') =>
  poll(gw, { client_id: clientId, device_code: device.device_code });

/** What a poll answered, as the test compares it. */
const errorOf = (p: Poll) => ({ status: p.status, body: p.body });
const failed = (body: Record<string, string>) => ({ status: 400, body });

/** The user's side: type the code on the /device page, sign in as alice, decide. */
async function decideOnPage(t: Test, gw: TestGateway, userCode: string, decision: 'allow' | 'deny'): Promise<void> {
  const browser = new BrowserSession();
  const entry = await browser.get(`${gw.url}/device`);
  t.equal(entry.status, 200);
  // Case, dash and space insensitive.
  const typed = ` ${userCode.toLowerCase().replace('-', ' ')} `;
  const login = await browser.post(`${gw.url}/device`, { csrf_token: entry.hidden('csrf_token'), user_code: typed });
  t.equal(login.status, 200, login.body.slice(0, 400));
  t.match(login.body, /Living-room TV/);
  const consent = await browser.post(`${gw.url}/device/login`, {
    csrf_token: login.hidden('csrf_token'),
    request: login.hidden('request'),
    username: 'alice',
    password: 'alice-pw',
  });
  t.equal(consent.status, 200);
  const done = await browser.post(`${gw.url}/device/consent`, {
    csrf_token: consent.hidden('csrf_token'),
    request: consent.hidden('request'),
    decision,
  });
  t.equal(done.status, 200);
  t.match(done.body, decision === 'allow' ? /connected/ : /not given access/);
}

async function clientFor(gw: TestGateway, clientId = 'tv'): Promise<oidc.Configuration> {
  const config = await oidc.discovery(new URL(gw.config.issuer), clientId, undefined, oidc.None(), {
    execute: [oidc.allowInsecureRequests],
  });
  // openid-client then checks the ID token's signature against the JWKS too, not only its claims.
  oidc.enableNonRepudiationChecks(config);
  return config;
}

/**
 * Every polling rule over HTTP. `page` serves the /device page and `a`, `b` take the polls; on
 * Redis they are three different views of two gateways, so each rule also holds across instances.
 */
function flowRules(t: Test, page: TestGateway, a: TestGateway, b: TestGateway): void {
  t.test('openid-client completes the device flow while the user approves on the /device page', async (t) => {
    const config = await clientFor(b);
    const device = await oidc.initiateDeviceAuthorization(config, { scope: 'openid api1 offline_access' });
    t.match(device.user_code, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    t.equal(device.verification_uri, `${b.config.issuer}/device`);
    t.equal(device.verification_uri_complete, `${b.config.issuer}/device?user_code=${device.user_code}`);
    t.equal(device.interval, 1);
    t.equal(device.expires_in, 300);
    t.ok(Buffer.from(device.device_code, 'base64url').length >= 32, 'device code carries at least 256 bits');

    const approve = decideOnPage(t, page, device.user_code, 'allow');
    const tokens = await oidc.pollDeviceAuthorizationGrant(config, device);
    await approve;
    t.equal(tokens.token_type, 'bearer');
    t.equal(tokens.scope, 'openid api1 offline_access');
    t.type(tokens.refresh_token, 'string');
    t.type(tokens.id_token, 'string');
    // openid-client validated the ID token (iss, aud, exp, iat, signature) before claims() returns.
    const claims = tokens.claims();
    t.equal(claims?.sub, 'sub-alice');
    t.equal(claims?.aud, 'tv');
    t.equal(claims?.iss, b.config.issuer);
    t.type(claims?.sid, 'string', 'the ID token carries the session that approved');
    t.type(claims?.auth_time, 'number');
    const jwks = createRemoteJWKSet(new URL(`${b.url}/.well-known/openid-configuration/jwks`));
    const { payload } = await jwtVerify(tokens.access_token, jwks, { issuer: b.config.issuer, audience: 'urn:api1', typ: 'at+jwt' });
    t.equal(payload.sub, 'sub-alice');
    t.equal(payload.client_id, 'tv');
    t.equal(payload.scope, 'openid api1 offline_access');
    // The refresh token is a real one: openid-client refreshes with it.
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token as string);
    t.type(refreshed.access_token, 'string');
    t.not(refreshed.refresh_token, tokens.refresh_token, 'rotated');
    // And the device code is spent.
    t.same(errorOf(await pollCode(a, device)), failed(bodies.invalidGrant));
  });

  t.test('without openid there is no ID token, without offline_access no refresh token', async (t) => {
    const config = await clientFor(a);
    const device = await oidc.initiateDeviceAuthorization(config, { scope: 'api1' });
    const approve = decideOnPage(t, page, device.user_code, 'allow');
    const tokens = await oidc.pollDeviceAuthorizationGrant(config, device);
    await approve;
    t.equal(tokens.scope, 'api1');
    t.equal(tokens.id_token, undefined);
    t.equal(tokens.refresh_token, undefined);
  });

  t.test(
    'before a decision polls are authorization_pending; too fast is slow_down and the interval stays grown for every gateway',
    async (t) => {
      const [slowed, control] = await Promise.all([authorize(a), authorize(a)]);
      const first = await pollCode(a, slowed);
      t.same(errorOf(first), failed(bodies.pending));
      t.equal(first.cacheControl, 'no-store');
      t.same(errorOf(await pollCode(a, slowed)), failed(bodies.slowDown), 'at once again: slow_down, the interval is now 6 s');
      t.same(errorOf(await pollCode(a, control)), failed(bodies.pending), 'the control code is polled once');
      await wait(1100);
      // More than the configured 1 s later: the control code is fine, the slowed one is not, on
      // another gateway too, because the grown interval is stored with the device code.
      t.same(errorOf(await pollCode(b, control)), failed(bodies.pending), '1.1 s after a 1 s interval is allowed');
      t.same(errorOf(await pollCode(b, slowed)), failed(bodies.slowDown), '1.1 s after a slow_down is still too fast (6 s)');
      t.same(errorOf(await pollCode(a, slowed)), failed(bodies.slowDown), 'and it grows again');
    },
  );

  t.test('a denied code polls as access_denied (openid-client surfaces it)', async (t) => {
    const config = await clientFor(a);
    const device = await oidc.initiateDeviceAuthorization(config, { scope: 'api1' });
    const deny = decideOnPage(t, page, device.user_code, 'deny');
    const refused = await oidc.pollDeviceAuthorizationGrant(config, device).then(
      () => undefined,
      (err: unknown) => err,
    );
    t.type(refused, oidc.ResponseBodyError);
    t.match(refused, { error: 'access_denied', error_description: 'The user denied the request.', status: 400 });
    await deny;
    t.same(errorOf(await pollCode(b, device)), failed(bodies.denied));
  });

  t.test('after expires_in a poll is expired_token', async (t) => {
    const device = await authorize(a, 'tv-short', 'api1');
    t.same(errorOf(await pollCode(a, device, 'tv-short')), failed(bodies.pending));
    await wait(1100);
    t.same(errorOf(await pollCode(b, device, 'tv-short')), failed(bodies.expired));
    t.same(errorOf(await pollCode(a, device, 'tv-short')), failed(bodies.expired));
  });

  t.test(
    'of 20 polls released at once after allow exactly one gets tokens; the other 19 and every later poll are invalid_grant',
    async (t) => {
      const device = await authorize(a);
      // A pending poll just before: an approved code is still not slowed down, so no loser gets slow_down.
      t.same(errorOf(await pollCode(a, device)), failed(bodies.pending));
      await decideOnPage(t, page, device.user_code, 'allow');
      const request = formPost('/connect/token', { grant_type: deviceGrant, client_id: 'tv', device_code: device.device_code });
      const ports = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a.port : b.port));
      const answers = await releaseAtOnce(ports, request);
      const won = answers.filter((x) => x.status === 200);
      t.equal(won.length, 1, `statuses: ${answers.map((x) => x.status).join(' ')}`);
      const tokens = JSON.parse(won[0]?.body ?? '{}') as Record<string, unknown>;
      t.same(Object.keys(tokens).sort(), ['access_token', 'expires_in', 'id_token', 'refresh_token', 'scope', 'token_type']);
      const lost = answers.filter((x) => x.status !== 200);
      t.equal(lost.length, 19);
      for (const answer of lost) {
        t.equal(answer.status, 400);
        t.same(JSON.parse(answer.body), bodies.invalidGrant);
        t.equal(answer.headers['cache-control'], 'no-store');
      }
      await wait(1100);
      t.same(errorOf(await pollCode(a, device)), failed(bodies.invalidGrant), 'a later, polite poll is invalid_grant');
      t.same(errorOf(await pollCode(b, device)), failed(bodies.invalidGrant));
      // The winner's refresh token was not revoked by the replays.
      const refreshed = await fetch(a.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          client_id: 'tv',
          refresh_token: tokens.refresh_token as string,
        }).toString(),
      });
      t.equal(refreshed.status, 200);
    },
  );

  t.test('a device code polled by another client is invalid_grant and stays usable by its own', async (t) => {
    const device = await authorize(a);
    t.same(errorOf(await pollCode(b, device, 'tv-other')), failed(bodies.invalidGrant));
    t.same(errorOf(await pollCode(a, device, 'tv')), failed(bodies.pending), "not slow_down: the other client's poll counted for nothing");
    await decideOnPage(t, page, device.user_code, 'allow');
    t.same(errorOf(await pollCode(b, device, 'tv-other')), failed(bodies.invalidGrant));
    t.equal((await pollCode(b, device, 'tv')).status, 200);
  });

  t.test('an unknown or garbage device code is invalid_grant; a missing one invalid_request', async (t) => {
    const real = await authorize(a);
    for (const code of ['garbage', 'x'.repeat(64), `${real.device_code.slice(0, -2)}AA`, `${real.device_code}A`, real.user_code]) {
      t.same(errorOf(await poll(a, { client_id: 'tv', device_code: code })), failed(bodies.invalidGrant), code);
    }
    const missing = await poll(b, { client_id: 'tv' });
    t.same(errorOf(missing), failed(bodies.missing));
    t.equal(missing.cacheControl, 'no-store');
    t.same(errorOf(await pollCode(a, real)), failed(bodies.pending), 'the real code was never touched');
  });
}

// The two stores share nothing (own gateways, own store, own throttles): run them side by side.
t.jobs = 2;
t.test('memory store', async (t) => flowRules(t, memoryGateway, memoryGateway, memoryGateway));
t.test('redis store, two gateways: page on one, polls on both', async (t) => flowRules(t, redisA, redisA, redisB));
