// Store-kept signing keys rotating while two gateways on one Redis serve requests
// (docs/operations.md, "Signing keys and rotation"): by `tessera keys rotate` and on a schedule.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import t, { type Test } from 'tap';
import { runCliCommand } from '../../helpers/cli_in_process.js';
import { keysListCommand } from '../../../gateway/cli/keys_list_command.js';
import { keysRotateCommand } from '../../../gateway/cli/keys_rotate_command.js';
import { validateConfig } from '../../../gateway/config/load.js';
import { startGateway, type RunningGateway, type StartOptions } from '../../../gateway/start/server.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { BrowserSession } from '../../helpers/browser_session.js';
import { freePort } from '../../helpers/free_port.js';
import { sendRedisCommand, startRedisServer } from '../../helpers/redis_server.js';
import { baseTestConfig, sha256Secret } from '../../helpers/test_gateway.js';

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning !== null) t.comment(redis.warning);

const form = 'application/x-www-form-urlencoded';
const formExpired = 'The form has expired.';
const deviceGrant = 'urn:ietf:params:oauth:grant-type:device_code';

interface Pair {
  readonly a: RunningGateway;
  readonly b: RunningGateway;
  readonly issuer: string;
  readonly configFile: string;
  /** One more gateway of the same issuer and config. */
  readonly start: () => Promise<RunningGateway>;
}

/** Two gateways of one issuer on one Redis (a load balancer would send to either). */
async function startPair(t: Test, signing: Record<string, unknown>, onEvent?: StartOptions['onEvent']): Promise<Pair> {
  const dir = t.testdir({});
  const raw = baseTestConfig();
  const issuer = 'http://127.0.0.1:5000';
  raw.issuer = issuer;
  raw.store = { type: 'redis', url: redis.url, keyPrefix: `rot${Date.now()}${Math.random().toString(36).slice(2, 6)}:` };
  raw.signing = signing;
  raw.apiResources = [{ name: 'urn:api1', scopes: ['api1'], secrets: [{ value: sha256Secret('api1-secret') }] }];
  (raw.clients as unknown[]).push({
    clientId: 'tv',
    requireClientSecret: false,
    allowedGrantTypes: [deviceGrant],
    allowedScopes: ['api1'],
  });
  const configFile = path.join(dir, 'tessera.json');
  writeFileSync(configFile, JSON.stringify(raw));
  const start = async () => {
    const port = await freePort();
    const config = validateConfig({ ...raw, listen: { host: '127.0.0.1', port } }, { configDir: dir, env: {} });
    const gateway = await startGateway({ config, devKeyDir: dir, ...(onEvent === undefined ? {} : { onEvent }) });
    t.teardown(() => gateway.stop());
    return gateway;
  };
  const a = await start();
  const b = await start();
  return { a, b, issuer, configFile, start };
}

async function jwksOf(gateway: RunningGateway): Promise<{ jwks: JSONWebKeySet; cacheControl: string | null }> {
  const res = await fetch(`${gateway.url}/.well-known/openid-configuration/jwks`);
  return { jwks: (await res.json()) as JSONWebKeySet, cacheControl: res.headers.get('cache-control') };
}

const kidsOf = (jwks: JSONWebKeySet) => jwks.keys.map((k) => k.kid as string);

async function issue(gateway: RunningGateway): Promise<string> {
  const res = await fetch(`${gateway.url}/connect/token`, {
    method: 'POST',
    headers: { authorization: basicAuthorization('m2m', 'secret'), 'content-type': form },
    body: 'grant_type=client_credentials&scope=api1',
  });
  if (res.status !== 200) throw new Error(`token request answered ${res.status}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

async function introspectionActive(gateway: RunningGateway, token: string): Promise<boolean> {
  const res = await fetch(`${gateway.url}/connect/introspect`, {
    method: 'POST',
    headers: { authorization: basicAuthorization('urn:api1', 'api1-secret'), 'content-type': form },
    body: new URLSearchParams({ token }).toString(),
  });
  return ((await res.json()) as { active: boolean }).active;
}

/** Whether `token` verifies against the JWKS `gateway` serves right now (as a resource server would). */
async function verifiesAt(gateway: RunningGateway, token: string, issuer: string): Promise<boolean> {
  const { jwks } = await jwksOf(gateway);
  try {
    await jwtVerify(token, createLocalJWKSet(jwks), { issuer, typ: 'at+jwt' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Issues tokens from both gateways in turn until `stop()` resolves; every token must verify, at
 * once, against the other gateway's JWKS (a key signs only once every node publishes it).
 */
function issueWhile(t: Test, pair: Pair) {
  const tokens: string[] = [];
  let running = true;
  const done = (async () => {
    for (let i = 0; running; i++) {
      const [from, other] = i % 2 === 0 ? [pair.a, pair.b] : [pair.b, pair.a];
      const token = await issue(from);
      tokens.push(token);
      if (!(await verifiesAt(other, token, pair.issuer)))
        t.fail(`token ${i} (kid ${decodeProtectedHeader(token).kid}) does not verify at the other gateway`);
      await new Promise((r) => setTimeout(r, 60));
    }
  })();
  return {
    tokens,
    stop: async () => {
      running = false;
      await done;
      return tokens;
    },
  };
}

async function checkEveryToken(t: Test, pair: Pair, tokens: readonly string[]): Promise<void> {
  const keySets = [createLocalJWKSet((await jwksOf(pair.a)).jwks), createLocalJWKSet((await jwksOf(pair.b)).jwks)];
  const verifies = async (token: string) => {
    for (const keys of keySets) await jwtVerify(token, keys, { issuer: pair.issuer, typ: 'at+jwt' });
    return true;
  };
  const results = await Promise.all(
    tokens.map(async (token) => ({
      verified: await verifies(token).catch(() => false),
      active: (await introspectionActive(pair.a, token)) && (await introspectionActive(pair.b, token)),
    })),
  );
  t.equal(results.filter((r) => r.verified).length, tokens.length, 'every token verifies against both JWKS');
  t.equal(results.filter((r) => r.active).length, tokens.length, 'every token introspects active on both gateways');
}

async function sameJwksSoon(pair: Pair): Promise<[string[], string[]]> {
  let kids: [string[], string[]] = [[], []];
  for (let i = 0; i < 30; i++) {
    kids = [kidsOf((await jwksOf(pair.a)).jwks), kidsOf((await jwksOf(pair.b)).jwks)];
    if (kids[0].join() === kids[1].join()) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return kids;
}

t.test('tessera keys rotate while requests flow', async (t) => {
  const pair = await startPair(t, { algorithm: 'ES256', jwksMaxAgeSeconds: 1 });
  const before = await jwksOf(pair.a);
  t.equal(before.cacheControl, 'public, max-age=1', 'the JWKS carries its configured max-age');
  const discovery = await fetch(`${pair.a.url}/.well-known/openid-configuration`);
  t.equal(discovery.headers.get('cache-control'), 'public, max-age=1', 'so does discovery');
  t.equal(before.jwks.keys.length, 1, 'one key to start with');
  const firstKid = kidsOf(before.jwks)[0] as string;

  // A page form started before the rotation (the device page's CSRF cookie and token).
  const browser = new BrowserSession();
  const entry = await browser.get(`${pair.a.url}/device`);
  const csrf = entry.hidden('csrf_token');

  const flow = issueWhile(t, pair);
  await new Promise((r) => setTimeout(r, 200));
  const rotated = await runCliCommand(keysRotateCommand, ['--config', pair.configFile]);
  t.equal(rotated.code, 0);
  t.match(rotated.stdout, /^Added \S+ \(ES256\): published now, signs from \S+ \(after 1 s of propagation\)\.\n$/);
  const again = await runCliCommand(keysRotateCommand, ['--config', pair.configFile]);
  t.match(again.stdout, /^A key already waits to activate: .*; nothing added\.\n$/, 'a second rotate adds nothing while a key waits');

  const listed = await runCliCommand(keysListCommand, ['--config', pair.configFile]);
  t.match(listed.stdout, /^KID +ALG +STATE +CREATED +ACTIVATES +EXPIRES\n/);
  t.match(listed.stdout, new RegExp(`^${firstKid} +ES256 +active `, 'm'));
  t.match(listed.stdout, / ES256 +next +\S+ +\S+ +-$/m);

  await new Promise((r) => setTimeout(r, 1800));
  const tokens = await flow.stop();
  const kids = new Set(tokens.map((token) => decodeProtectedHeader(token).kid));
  t.equal(kids.size, 2, 'tokens were signed with the old key and then with the new one, on both gateways');
  const [onA, onB] = await sameJwksSoon(pair);
  t.same(onA, onB, 'both gateways publish the same keys in the same order');
  t.equal(onA.length, 2);
  t.equal(onA[1], firstKid, 'newest first: the retired key follows');
  await checkEveryToken(t, pair, tokens);

  const afterList = await runCliCommand(keysListCommand, ['--config', pair.configFile]);
  t.match(afterList.stdout, new RegExp(`^${firstKid} +ES256 +retired +\\S+ +\\S+ +\\d{4}-`, 'm'), 'the old key is retired, with an expiry');

  // The form from before the rotation, posted to the other gateway after it: the sign-in page follows.
  const device = await fetch(`${pair.a.url}/connect/deviceauthorization`, {
    method: 'POST',
    headers: { 'content-type': form },
    body: 'client_id=tv&scope=api1',
  });
  const userCode = ((await device.json()) as { user_code: string }).user_code;
  const forged = await browser.post(`${pair.b.url}/device`, { csrf_token: `${csrf.slice(0, -2)}xx`, user_code: userCode });
  t.equal(forged.status, 400, 'control: a wrong token is refused');
  t.match(forged.body, formExpired);
  const posted = await browser.post(`${pair.b.url}/device`, { csrf_token: csrf, user_code: userCode });
  t.equal(posted.status, 200, 'a form started before the rotation still works');
  t.match(posted.body, 'name="password"', 'and leads to the sign-in');
});

t.test('automatic rotation on a short schedule while requests flow', async (t) => {
  const rotated: string[] = [];
  const pair = await startPair(
    t,
    {
      algorithm: 'ES256',
      jwksMaxAgeSeconds: 0,
      rotation: { every: '1s', propagation: '0.5s', retention: '1h' },
    },
    (event) => {
      if (event.name === 'KeyRotated') rotated.push(String((event.details as { kid?: unknown } | undefined)?.kid));
    },
  );
  const flow = issueWhile(t, pair);
  // Until tokens of three keys were seen (2.6 s on a quiet machine), at most 10 s: a loaded machine
  // delays the rotation timers, not the rotation.
  const started = Date.now();
  const kidsSoFar = () => new Set(flow.tokens.map((token) => decodeProtectedHeader(token).kid)).size;
  while (kidsSoFar() < 3 && Date.now() - started < 10_000) await new Promise((r) => setTimeout(r, 100));
  const tokens = await flow.stop();
  const kids = new Set(tokens.map((token) => decodeProtectedHeader(token).kid));
  t.ok(kids.size >= 3, `tokens were signed by ${kids.size} keys in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const [onA, onB] = await sameJwksSoon(pair);
  t.same(onA, onB, 'both gateways publish the same keys in the same order');
  t.ok(onA.length >= kids.size, 'every key that signed is published');
  await checkEveryToken(t, pair, tokens);
  // Each of the two gateways tells of every key that took over signing on it (docs/operations.md, "Events").
  t.ok(rotated.length >= 2 * (kids.size - 1), `${rotated.length} KeyRotated events for ${kids.size} signing keys on two gateways`);
  t.ok(
    rotated.every((kid) => onA.includes(kid)),
    'each names a published key',
  );
});

t.test('a gateway started after Redis lost its data converges with the running ones', async (t) => {
  if (!redis.managed) {
    t.comment('will not flush a shared redis-server');
    return;
  }
  const pair = await startPair(t, { algorithm: 'ES256', jwksMaxAgeSeconds: 1 });
  const before = await issue(pair.a);
  const [oldKid] = kidsOf((await jwksOf(pair.a)).jwks);
  t.equal(await sendRedisCommand(redis.port, 'FLUSHALL'), '+OK\r\n');
  const late = await pair.start();
  const trio = { ...pair, b: late };
  const [onA, onLate] = await sameJwksSoon(trio);
  t.same(onA, onLate, 'the old and the new gateway publish the same keys');
  t.ok(onLate.includes(oldKid as string), 'the running gateways wrote their key back');
  t.ok(await verifiesAt(late, before, pair.issuer), 'a token from before the loss verifies at the new gateway');
  const after = await issue(late);
  t.ok(await verifiesAt(pair.a, after, pair.issuer), "the new gateway's token verifies at the old one");
  t.ok(await introspectionActive(pair.b, after), 'and introspects active there');
});
