// The device_code grant (workers/grants/device_code.ts): the polling rules of RFC 8628 §3.5 called
// directly, with a clock the test moves by hand, on the memory store and on a private redis-server.
// Over HTTP (two gateways sharing Redis, 20 polls released at once, openid-client) see
// test/e2e/device_code.test.ts.
import t, { type Test } from 'tap';
import { decodeJwt, importJWK, jwtVerify } from 'jose';
import { pino } from 'pino';
import { clientSchema } from '../../../gateway/config/schema.js';
import type { ClientConfig } from '../../../core/worker_config.js';
import { generateSigningKey } from '../../../gateway/keys/key_loader.js';
import { deviceCodeGrant } from '../../../workers/grants/device_code.js';
import { deviceCodeGrantType } from '../../../core/grant_types.js';
import type { GrantServices, TokenResponse } from '../../../workers/grants/grant_handler.js';
import { ScopeRules } from '../../../core/rules/scope_rules.js';
import { registerClients, type RegisteredClient } from '../../../core/client_model.js';
import { OAuthError } from '../../../core/oauth_errors.js';
import type { FormParams } from '../../../wire/token_task.js';
import { MemoryStore } from '../../../core/store/memory_store.js';
import { RedisStore } from '../../../core/store/redis_store.js';
import type { Store } from '../../../core/store/store.js';
import { expiredGraceMs, pollStateKey, type DeviceCodeRecord, type PollState } from '../../../core/records/device_code_record.js';
import { IdTokenBuilder } from '../../../workers/tokens/id_token.js';
import { JwtSigner } from '../../../workers/tokens/jwt_signer.js';
import { newFamilyHandle, newFamilyId, parseRefreshHandle, type FamilyHandle } from '../../../core/records/refresh_token_handle.js';
import { publicJwk } from '../../../core/signing_key.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { refreshExpiry } from '../../../workers/tokens/refresh_token_record.js';

const issuer = 'https://tessera.test';
const signingKey = await generateSigningKey('ES256');
const verificationKey = await importJWK(publicJwk(signingKey), 'ES256');

const pending = 'authorization_pending: The user has not finished yet.';
const slowDown = 'slow_down: Polling too fast: wait longer between requests.';
const denied = 'access_denied: The user denied the request.';
const expired = 'expired_token: The device code has expired.';
const invalidGrant = 'invalid_grant: The device code is invalid or already used.';

const deviceClient = (clientId: string, overrides: Partial<ClientConfig> = {}): ClientConfig =>
  clientSchema.parse({
    clientId,
    requireClientSecret: false,
    allowedGrantTypes: [deviceCodeGrantType, 'refresh_token'],
    allowedScopes: ['openid', 'profile', 'api1', 'offline_access'],
    allowOfflineAccess: true,
    pollingInterval: 5,
    deviceCodeLifetime: 300,
    ...overrides,
  });

const clients = registerClients([deviceClient('tv'), deviceClient('tv2')]);

interface Harness {
  store: Store;
  services: GrantServices;
  /** Epoch ms the grant sees. */
  readonly clock: number;
  advance(ms: number): void;
  /** A pending device authorization of `clientId`, as the endpoint stores it. */
  authorize(clientId?: string, scopes?: string[], lifetimeSeconds?: number): Promise<FamilyHandle>;
  /** What the consent page writes. */
  decide(device: FamilyHandle, decision: 'allow' | 'deny'): Promise<void>;
  poll(device: string | undefined, clientId?: string): Promise<TokenResponse>;
  /** The error a poll fails with, as `error: description`; `'200'` when it succeeds. */
  pollError(device: string | undefined, clientId?: string): Promise<string>;
}

function client(id: string): RegisteredClient {
  const found = clients.get(id);
  if (found === undefined) throw new Error(`no client ${id}`);
  return found;
}

function harness(store: Store, start: () => number): Harness {
  let clock = start();
  const now = () => clock;
  const config = {
    identityResources: [
      { name: 'openid', claims: ['sub'] },
      { name: 'profile', claims: ['name'] },
    ],
    apiScopes: [{ name: 'api1' }],
    apiResources: [{ name: 'urn:api1', scopes: ['api1'], secrets: [] }],
    users: [],
  };
  const services: GrantServices = {
    issuer,
    clients,
    scopes: new ScopeRules(config),
    signer: new JwtSigner(signingKey),
    idTokens: new IdTokenBuilder(config, issuer, signingKey.alg),
    store,
    now,
    logger: pino({ level: 'silent' }),
  };
  const poll = async (device: string | undefined, clientId = 'tv'): Promise<TokenResponse> => {
    const params = Object.create(null) as FormParams;
    params.grant_type = deviceCodeGrantType;
    if (device !== undefined) params.device_code = device;
    return deviceCodeGrant.handle({ grantType: deviceCodeGrantType, client: client(clientId), params }, services);
  };
  const records = new Map<string, DeviceCodeRecord>();
  return {
    store,
    services,
    get clock() {
      return clock;
    },
    advance: (ms) => (clock += ms),
    async authorize(clientId = 'tv', scopes = ['openid', 'api1', 'offline_access'], lifetimeSeconds = 300) {
      const family = newFamilyId();
      const device = newFamilyHandle('dc', family);
      const record: DeviceCodeRecord = { v: 1, clientId, scopes, expiresAt: clock + lifetimeSeconds * 1000, status: 'pending', family };
      records.set(device.handle, record);
      await store.set(device.key, record, lifetimeSeconds * 1000 + expiredGraceMs);
      return device;
    },
    async decide(device, decision) {
      const record = records.get(device.handle) as DeviceCodeRecord;
      const decided: DeviceCodeRecord =
        decision === 'allow'
          ? {
              ...record,
              status: 'approved',
              subject: 'sub-alice',
              claims: { auth_time: Math.floor(clock / 1000), amr: ['pwd'], idp: 'local' },
              sid: 'sid-1',
            }
          : { ...record, status: 'denied' };
      await store.set(device.key, decided, record.expiresAt - clock + expiredGraceMs);
    },
    poll,
    async pollError(device, clientId) {
      try {
        await poll(device, clientId);
      } catch (err) {
        if (err instanceof OAuthError) return `${err.error}: ${err.description}`;
        throw err;
      }
      return '200';
    },
  };
}

async function storedInterval(h: Harness, device: FamilyHandle): Promise<number | undefined> {
  return (await h.store.get<PollState>(pollStateKey(device.key)))?.interval;
}

function pollingRules(t: Test, makeHarness: () => Harness, options: { realTtls: boolean }): void {
  t.test('a missing device_code is invalid_request', async (t) => {
    const h = makeHarness();
    t.equal(await h.pollError(undefined), 'invalid_request: The device_code parameter is missing.');
  });

  t.test('a garbage, a truncated or an unknown device code is invalid_grant', async (t) => {
    const h = makeHarness();
    const real = await h.authorize();
    t.equal(await h.pollError('garbage'), invalidGrant);
    t.equal(await h.pollError(''), invalidGrant);
    t.equal(await h.pollError(real.handle.slice(0, -1)), invalidGrant);
    t.equal(await h.pollError(`${real.handle.slice(0, -1)}!`), invalidGrant);
    // Well formed, same family, other secret: never stored.
    t.equal(await h.pollError(newFamilyHandle('dc', real.family).handle), invalidGrant);
    t.equal(await h.pollError(newFamilyHandle('dc', newFamilyId()).handle), invalidGrant);
    // A refresh-token-shaped handle of another kind is just as unknown here.
    t.equal(await h.pollError(newFamilyHandle('rt', real.family).handle), invalidGrant);
  });

  t.test('before a decision the poll is authorization_pending and starts the interval', async (t) => {
    const h = makeHarness();
    const device = await h.authorize();
    t.equal(await h.pollError(device.handle), pending);
    t.same(await h.store.get<PollState>(pollStateKey(device.key)), { lastPollAt: h.clock, interval: 5 });
    h.advance(5000);
    t.equal(await h.pollError(device.handle), pending, 'exactly one interval later is allowed');
    h.advance(5000);
    t.equal(await h.pollError(device.handle), pending);
    t.equal(await storedInterval(h, device), 5, 'polite polling never grows the interval');
  });

  t.test('polling faster than the interval is slow_down and grows the stored interval by 5 s', async (t) => {
    const h = makeHarness();
    const device = await h.authorize();
    t.equal(await h.pollError(device.handle), pending);
    h.advance(4999);
    t.equal(await h.pollError(device.handle), slowDown);
    t.same(await h.store.get<PollState>(pollStateKey(device.key)), { lastPollAt: h.clock, interval: 10 });
    // The old interval no longer suffices: 5 s after the slow_down is still too fast.
    h.advance(5000);
    t.equal(await h.pollError(device.handle), slowDown, 'the grown interval (10 s) holds for the next poll');
    t.equal(await storedInterval(h, device), 15, 'every slow_down adds 5 s');
    h.advance(14_999);
    t.equal(await h.pollError(device.handle), slowDown);
    t.equal(await storedInterval(h, device), 20);
    h.advance(20_000);
    t.equal(await h.pollError(device.handle), pending, 'waiting the grown interval is allowed');
    t.equal(await storedInterval(h, device), 20, 'the interval never shrinks back');
    h.advance(19_999);
    t.equal(await h.pollError(device.handle), slowDown);
  });

  t.test('an immediate second poll is slow_down, and so is the one right after it', async (t) => {
    const h = makeHarness();
    const device = await h.authorize();
    t.equal(await h.pollError(device.handle), pending);
    t.equal(await h.pollError(device.handle), slowDown);
    t.equal(await h.pollError(device.handle), slowDown);
    t.equal(await storedInterval(h, device), 15);
  });

  t.test('the interval is per device code', async (t) => {
    const h = makeHarness();
    const [a, b] = [await h.authorize(), await h.authorize()];
    t.equal(await h.pollError(a.handle), pending);
    t.equal(await h.pollError(a.handle), slowDown);
    t.equal(await h.pollError(b.handle), pending, 'another device code of the same client is not slowed');
    t.equal(await storedInterval(h, b), 5);
  });

  t.test('a device code polled by another client is invalid_grant and leaves its polling state alone', async (t) => {
    const h = makeHarness();
    const device = await h.authorize('tv');
    t.equal(await h.pollError(device.handle, 'tv2'), invalidGrant);
    t.equal(await storedInterval(h, device), undefined);
    t.equal(await h.pollError(device.handle, 'tv'), pending);
    await h.decide(device, 'allow');
    t.equal(await h.pollError(device.handle, 'tv2'), invalidGrant, 'an approved code is no use to another client');
    t.equal(await h.pollError(device.handle, 'tv'), '200', 'and the other client did not spend it');
  });

  t.test('after deny every poll is access_denied, however fast', async (t) => {
    const h = makeHarness();
    const device = await h.authorize();
    t.equal(await h.pollError(device.handle), pending);
    await h.decide(device, 'deny');
    t.equal(await h.pollError(device.handle), denied);
    t.equal(await h.pollError(device.handle), denied, 'a decision is not slowed down: slow_down is a kind of pending');
    h.advance(60_000);
    t.equal(await h.pollError(device.handle), denied);
  });

  t.test('after expires_in every poll is expired_token, whatever the decision', async (t) => {
    const h = makeHarness();
    const [open, allowed, refused] = [await h.authorize(), await h.authorize(), await h.authorize()];
    await h.decide(allowed, 'allow');
    await h.decide(refused, 'deny');
    h.advance(299_999);
    t.equal(await h.pollError(open.handle), pending, 'one millisecond before the end it is still pending');
    h.advance(1);
    t.equal(await h.pollError(open.handle), expired);
    t.equal(await h.pollError(allowed.handle), expired, 'an approval does not outlive expires_in');
    t.equal(await h.pollError(refused.handle), expired);
    t.equal(await h.pollError(open.handle, 'tv2'), invalidGrant, 'another client learns nothing, not even expiry');
    if (!options.realTtls) {
      h.advance(expiredGraceMs);
      t.equal(await h.pollError(open.handle), invalidGrant, 'once the grace period is over the record is gone');
    }
  });

  t.test('after allow the poll gets an access token, a refresh token and an ID token', async (t) => {
    const h = makeHarness();
    const device = await h.authorize('tv', ['openid', 'api1', 'offline_access']);
    t.equal(await h.pollError(device.handle), pending);
    await h.decide(device, 'allow');
    // Every store call the redemption makes, by method: one (docs/storage.md, "One round trip per
    // redemption").
    const calls: string[] = [];
    const store = h.services.store;
    (h.services as { store: Store }).store = new Proxy(store, {
      get(target, name, receiver) {
        const value: unknown = Reflect.get(target, name, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          calls.push(String(name));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    // Right after the pending poll: an approved code is not slowed down.
    const tokens = await h.poll(device.handle);
    (h.services as { store: Store }).store = store;
    t.same(calls, ['redeemRecord'], 'one store call');
    t.same(Object.keys(tokens).sort(), ['access_token', 'expires_in', 'id_token', 'refresh_token', 'scope', 'token_type']);
    t.equal(tokens.token_type, 'Bearer');
    t.equal(tokens.scope, 'openid api1 offline_access');
    t.equal(tokens.expires_in, 3600);
    const { payload, protectedHeader } = await jwtVerify(tokens.access_token, verificationKey, {
      issuer,
      audience: 'urn:api1',
      typ: 'at+jwt',
      currentDate: new Date(h.clock),
    });
    t.equal(protectedHeader.kid, signingKey.kid);
    t.equal(payload.sub, 'sub-alice');
    t.equal(payload.client_id, 'tv');
    t.equal(payload.scope, 'openid api1 offline_access');
    const id = decodeJwt(tokens.id_token as string);
    t.equal(id.sub, 'sub-alice');
    t.equal(id.aud, 'tv');
    t.equal(id.sid, 'sid-1', 'the ID token carries the session that approved');
    t.equal(id.auth_time, Math.floor(h.clock / 1000));
    const refresh = parseRefreshHandle(tokens.refresh_token as string);
    t.equal(refresh?.family, device.family, 'the refresh token joins the device code family');
    const absoluteExpiresAt = h.clock + client('tv').config.absoluteRefreshTokenLifetime * 1000;
    t.same(
      await h.store.get(refresh?.key as FamilyHandle['key']),
      {
        v: 1,
        clientId: 'tv',
        family: device.family,
        createdAt: h.clock,
        absoluteExpiresAt,
        expiresAt: refreshExpiry(client('tv').config, absoluteExpiresAt, h.clock),
        subject: 'sub-alice',
        scopes: ['openid', 'api1', 'offline_access'],
        claims: { auth_time: Math.floor(h.clock / 1000), amr: ['pwd'], idp: 'local' },
        openId: { sid: 'sid-1' },
      },
      'the refresh token is stored: the record the two-step redemption writes',
    );
  });

  t.test('without offline_access there is no refresh token, without openid no ID token', async (t) => {
    const h = makeHarness();
    const device = await h.authorize('tv', ['api1']);
    await h.decide(device, 'allow');
    const tokens = await h.poll(device.handle);
    t.same(Object.keys(tokens).sort(), ['access_token', 'expires_in', 'scope', 'token_type']);
    t.equal(tokens.scope, 'api1');
  });

  t.test('an approved code is redeemed once; later polls are invalid_grant and revoke nothing', async (t) => {
    const h = makeHarness();
    const device = await h.authorize();
    await h.decide(device, 'allow');
    const tokens = await h.poll(device.handle);
    t.equal(await h.pollError(device.handle), invalidGrant);
    h.advance(10_000);
    t.equal(await h.pollError(device.handle), invalidGrant);
    // A client that polls once more after success is ordinary, not an attack (its item has no replayRetentionMs).
    t.equal(await h.store.isFamilyRevoked(device.family), false);
    const refresh = parseRefreshHandle(tokens.refresh_token as string);
    t.not(await h.store.get(refresh?.key as FamilyHandle['key']), null, "the first poll's refresh token still works");
  });

  t.test('of 20 concurrent polls of an approved code exactly one gets tokens, the rest invalid_grant', async (t) => {
    const h = makeHarness();
    const device = await h.authorize();
    t.equal(await h.pollError(device.handle), pending);
    await h.decide(device, 'allow');
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => h.pollError(device.handle)));
    t.equal(outcomes.filter((o) => o === '200').length, 1);
    t.equal(outcomes.filter((o) => o === invalidGrant).length, 19);
  });
}

t.test('memory store', async (t) => {
  pollingRules(
    t,
    () => {
      let clock = Date.UTC(2030, 0, 1);
      const store = new MemoryStore({ now: () => clock });
      t.teardown(() => store.close());
      const h = harness(store, () => clock);
      // The store's TTL clock follows the grant's.
      const advance = h.advance;
      h.advance = (ms) => {
        advance(ms);
        clock += ms;
      };
      return h;
    },
    { realTtls: false },
  );
});

t.test('redis store', async (t) => {
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  if (redis.warning) t.comment(redis.warning);
  const store = new RedisStore({ url: redis.url, keyPrefix: `device-code-test-${process.pid}:` });
  t.teardown(() => store.close());
  // Redis keeps real TTLs: the grant's clock starts now and the test never moves it past a TTL.
  pollingRules(t, () => harness(store, Date.now), { realTtls: true });
});
