// The refresh_token grant (workers/grants/refresh_token.ts) and the issuance step that starts a
// family (workers/grants/token_issuance.ts), called directly with a clock the test moves by hand.
// Races are the end-to-end test's business (test/e2e/refresh_token.test.ts); here every rule of
// expiry, binding, scope and rotation is checked at the millisecond.
import t, { type Test } from 'tap';
import { decodeJwt } from 'jose';
import { pino } from 'pino';
import { clientSchema } from '../../../gateway/config/schema.js';
import type { ClientConfig } from '../../../core/worker_config.js';
import { generateSigningKey } from '../../../gateway/keys/key_loader.js';
import type { GrantServices, TokenResponse } from '../../../workers/grants/grant_handler.js';
import { refreshTokenGrant } from '../../../workers/grants/refresh_token.js';
import { ScopeRules, userPolicy } from '../../../core/rules/scope_rules.js';
import { issueTokens } from '../../../workers/grants/token_issuance.js';
import { registerClients, type RegisteredClient } from '../../../core/client_model.js';
import { OAuthError } from '../../../core/oauth_errors.js';
import type { FormParams } from '../../../wire/token_task.js';
import { MemoryStore } from '../../../core/store/memory_store.js';
import { StoreUnavailableError } from '../../../core/store/store.js';
import { IdTokenBuilder } from '../../../workers/tokens/id_token.js';
import { JwtSigner } from '../../../workers/tokens/jwt_signer.js';
import { issuedTokensFamily, parseRefreshHandle } from '../../../core/records/refresh_token_handle.js';
import type { RefreshTokenRecord } from '../../../workers/tokens/refresh_token_record.js';
import { openRetryRecord, type RetryRecord } from '../../../workers/tokens/refresh_token_retry.js';

/** The default rate limit of a client's chain (refreshTokenRotationsPerMinute). */
const chainLimits = { limit: 60, windowMs: 60_000, ttlMs: 3_600_000 };

const issuer = 'https://tessera.test';
const hour = 3_600_000;
const signingKey = await generateSigningKey('ES256');

const userClient = (clientId: string, overrides: Partial<ClientConfig> = {}): ClientConfig =>
  clientSchema.parse({
    clientId,
    allowedGrantTypes: ['password', 'refresh_token'],
    allowedScopes: ['openid', 'api1', 'api2', 'offline_access'],
    allowOfflineAccess: true,
    accessTokenLifetime: 3600,
    slidingRefreshTokenLifetime: 7200,
    ...overrides,
  });

const clientConfigs: ClientConfig[] = [
  // 10 h absolute.
  userClient('rotating', { absoluteRefreshTokenLifetime: 36_000 }),
  userClient('reusing', { refreshTokenUsage: 'reUse', absoluteRefreshTokenLifetime: 36_000 }),
  // 10 h absolute, 2 h sliding.
  userClient('sliding', { refreshTokenExpiration: 'sliding', slidingRefreshTokenLifetime: 7200, absoluteRefreshTokenLifetime: 36_000 }),
  userClient('sliding-reusing', {
    refreshTokenUsage: 'reUse',
    refreshTokenExpiration: 'sliding',
    slidingRefreshTokenLifetime: 7200,
    absoluteRefreshTokenLifetime: 36_000,
  }),
  userClient('other'),
  // Today's strict reuse detection: no grace window.
  userClient('strict', { absoluteRefreshTokenLifetime: 36_000, refreshTokenReuseGraceSeconds: 0 }),
  userClient('no-offline', { allowOfflineAccess: false, allowedScopes: ['api1'] }),
  // Three issuances of one family a minute.
  userClient('limited', { absoluteRefreshTokenLifetime: 36_000, refreshTokenRotationsPerMinute: 3 }),
];

interface Harness {
  services: GrantServices;
  store: MemoryStore;
  advance(ms: number): void;
  client(id: string): RegisteredClient;
  /** Runs the password grant's last step for alice: what every user grant ends with. */
  issue(clientId: string, scope?: string): Promise<TokenResponse>;
  refresh(clientId: string, params: FormParams): Promise<TokenResponse>;
  /** The error a refresh fails with, as `error: description`. */
  refreshError(clientId: string, params: FormParams): Promise<string>;
}

function harness(t: Test): Harness {
  // One clock for the grant (epoch ms) and the store (TTLs), as on a real gateway.
  let clock = Date.UTC(2030, 0, 1);
  const now = () => clock;
  const store = new MemoryStore({ now });
  t.teardown(() => store.close());
  const identityResources = [{ name: 'openid', claims: ['sub'] }];
  const scopes = new ScopeRules({
    identityResources,
    apiScopes: [{ name: 'api1' }, { name: 'api2' }],
    apiResources: [
      { name: 'urn:api1', scopes: ['api1'] },
      { name: 'urn:api2', scopes: ['api2'] },
    ],
  });
  const clients = registerClients(clientConfigs);
  const services: GrantServices = {
    issuer,
    clients,
    scopes,
    signer: new JwtSigner(signingKey),
    idTokens: new IdTokenBuilder({ identityResources, users: [] }, issuer, signingKey.alg),
    store,
    now,
    logger: pino({ level: 'silent' }),
  };
  const client = (id: string): RegisteredClient => {
    const found = clients.get(id);
    if (found === undefined) throw new Error(`no client ${id}`);
    return found;
  };
  const refresh = async (clientId: string, params: FormParams) =>
    refreshTokenGrant.handle({ grantType: 'refresh_token', client: client(clientId), params }, services);
  return {
    services,
    store,
    advance: (ms) => (clock += ms),
    client,
    async issue(clientId, scope = 'openid api1 api2 offline_access') {
      const registered = client(clientId);
      const request = { grantType: 'password', client: registered, params: { scope } };
      return issueTokens(request, services, {
        scopes: scopes.resolve(registered, scope, userPolicy),
        subject: 'sub-alice',
        claims: { auth_time: Math.floor(clock / 1000), idp: 'local', amr: ['pwd'] },
      });
    },
    refresh,
    async refreshError(clientId, params) {
      try {
        await refresh(clientId, params);
      } catch (err) {
        if (err instanceof OAuthError) return `${err.error}: ${err.description}`;
        throw err;
      }
      return 'no error';
    },
  };
}

const rejected = 'invalid_grant: The refresh token is invalid, expired or revoked.';

/**
 * Puts `around` in place of the store's rotation: the one-trip `redeemChain` the grant calls in
 * the steady state and the two-step `rotateChain` (docs/storage.md, "One round trip per
 * redemption"). `around` gets the real call, to apply or not. Returns the undo.
 */
function hookRotation(store: MemoryStore, around: (apply: () => Promise<unknown>) => Promise<unknown>): () => void {
  const realRotate = store.rotateChain.bind(store);
  const realRedeem = store.redeemChain.bind(store);
  store.rotateChain = ((...args: Parameters<MemoryStore['rotateChain']>) =>
    around(() => realRotate(...args))) as MemoryStore['rotateChain'];
  store.redeemChain = ((...args: Parameters<MemoryStore['redeemChain']>) =>
    around(() => realRedeem(...args))) as MemoryStore['redeemChain'];
  return () => {
    store.rotateChain = realRotate;
    store.redeemChain = realRedeem;
  };
}

const refreshTokenOf = (response: TokenResponse): string => {
  if (response.refresh_token === undefined) throw new Error('no refresh token in the response');
  return response.refresh_token;
};
const recordOf = async (h: Harness, handle: string) => {
  const parsed = parseRefreshHandle(handle);
  if (parsed === undefined) throw new Error('not a refresh handle');
  return h.store.get<RefreshTokenRecord>(parsed.key);
};

t.test('issuance', async (t) => {
  t.test('starts a family when offline_access is granted to a client allowed it', async (t) => {
    const h = harness(t);
    const response = await h.issue('rotating');
    const handle = refreshTokenOf(response);
    t.equal(response.scope, 'openid api1 api2 offline_access');
    t.equal(Buffer.from(handle, 'base64url').length, 48, '384 random bits: 128 name the family, 256 are secret');
    const record = await recordOf(h, handle);
    t.match(record, {
      clientId: 'rotating',
      subject: 'sub-alice',
      scopes: ['openid', 'api1', 'api2', 'offline_access'],
      claims: { idp: 'local', amr: ['pwd'] },
      createdAt: h.services.now(),
      absoluteExpiresAt: h.services.now() + 10 * hour,
      expiresAt: h.services.now() + 10 * hour,
    });
  });

  t.test('issues no refresh token without offline_access', async (t) => {
    const h = harness(t);
    const response = await h.issue('rotating', 'api1');
    t.equal(response.refresh_token, undefined);
  });

  t.test('issues no refresh token to a client-only grant (no subject)', async (t) => {
    const h = harness(t);
    const registered = h.client('rotating');
    const response = await issueTokens({ grantType: 'client_credentials', client: registered, params: {} }, h.services, {
      scopes: h.services.scopes.resolve(registered, 'api1 offline_access', userPolicy),
    });
    t.equal(response.refresh_token, undefined);
  });

  t.test('refuses offline_access for a client without allowOfflineAccess', async (t) => {
    const h = harness(t);
    let refused: unknown;
    try {
      h.services.scopes.resolve(h.client('no-offline'), 'api1 offline_access', userPolicy);
    } catch (err) {
      refused = err;
    }
    t.match(refused, { error: 'invalid_scope' });
  });

  t.test('keys the record by SHA-256 of the handle under the family, never by the handle', async (t) => {
    const h = harness(t);
    const handle = refreshTokenOf(await h.issue('rotating'));
    const parsed = parseRefreshHandle(handle);
    t.ok(parsed);
    t.not(parsed?.key.id, handle);
    t.equal(parsed?.key.id.length, 43, 'base64url of 32 bytes');
    t.equal(
      parsed?.key.family,
      Buffer.from(handle, 'base64url').subarray(0, 16).toString('base64url'),
      'the first 16 bytes name the family',
    );
  });
});

t.test('request checks', async (t) => {
  t.test('answers invalid_request when refresh_token is missing', async (t) => {
    const h = harness(t);
    t.equal(await h.refreshError('rotating', {}), 'invalid_request: The refresh_token parameter is missing.');
  });

  t.test('answers invalid_grant for a garbage or unknown handle', async (t) => {
    const h = harness(t);
    const real = refreshTokenOf(await h.issue('rotating'));
    const unknown = Buffer.from(real, 'base64url');
    unknown[40] = (unknown[40] ?? 0) ^ 0xff;
    for (const token of [
      '',
      'garbage',
      real.slice(1),
      `${real}A`,
      real.replace(/.$/, '*'),
      unknown.toString('base64url'),
      'a'.repeat(64),
    ]) {
      t.equal(await h.refreshError('rotating', { refresh_token: token }), rejected, JSON.stringify(token));
    }
    t.ok(await h.refresh('rotating', { refresh_token: real }), 'the real token was not harmed');
  });
});

t.test('client binding', async (t) => {
  t.test('refuses a token issued to another client without consuming it', async (t) => {
    const h = harness(t);
    const handle = refreshTokenOf(await h.issue('rotating'));
    t.equal(await h.refreshError('other', { refresh_token: handle }), rejected);
    t.equal(await h.refreshError('other', { refresh_token: handle }), rejected, 'twice: no reuse detection for a stranger');
    const own = await h.refresh('rotating', { refresh_token: handle });
    t.equal(decodeJwt(own.access_token).client_id, 'rotating', 'the token still works for its own client');
  });
});

t.test('absolute expiration', async (t) => {
  t.test('refuses the token from absoluteRefreshTokenLifetime on, rotations included', async (t) => {
    const h = harness(t);
    let handle = refreshTokenOf(await h.issue('rotating'));
    for (let i = 0; i < 9; i++) {
      h.advance(hour);
      handle = refreshTokenOf(await h.refresh('rotating', { refresh_token: handle }));
      t.equal((await recordOf(h, handle))?.expiresAt, Date.UTC(2030, 0, 1) + 10 * hour, 'a rotation keeps the absolute expiry');
    }
    h.advance(hour - 1);
    const last = refreshTokenOf(await h.refresh('rotating', { refresh_token: handle }));
    h.advance(1);
    t.equal(await h.refreshError('rotating', { refresh_token: last }), rejected, 'refused at the absolute limit');
  });

  t.test('a reUse token keeps its handle and its absolute expiry', async (t) => {
    const h = harness(t);
    const handle = refreshTokenOf(await h.issue('reusing'));
    h.advance(9 * hour);
    const response = await h.refresh('reusing', { refresh_token: handle });
    t.equal(response.refresh_token, handle, 'the same handle comes back');
    h.advance(hour - 1);
    t.equal((await h.refresh('reusing', { refresh_token: handle })).refresh_token, handle);
    h.advance(1);
    t.equal(await h.refreshError('reusing', { refresh_token: handle }), rejected);
  });
});

t.test('sliding expiration', async (t) => {
  t.test('refuses a token unused for slidingRefreshTokenLifetime', async (t) => {
    const h = harness(t);
    const handle = refreshTokenOf(await h.issue('sliding'));
    t.equal((await recordOf(h, handle))?.expiresAt, h.services.now() + 2 * hour);
    h.advance(2 * hour);
    t.equal(await h.refreshError('sliding', { refresh_token: handle }), rejected);
  });

  t.test('each use renews the window, but never beyond the absolute limit', async (t) => {
    const h = harness(t);
    const start = h.services.now();
    let handle = refreshTokenOf(await h.issue('sliding'));
    // Every 2 h - 1 ms: each use is just in time, and the family outlives any single window.
    for (let i = 1; i <= 5; i++) {
      h.advance(2 * hour - 1);
      handle = refreshTokenOf(await h.refresh('sliding', { refresh_token: handle }));
      const record = await recordOf(h, handle);
      t.equal(record?.expiresAt, Math.min(h.services.now() + 2 * hour, start + 10 * hour), `use ${i} renews the window`);
      t.equal(record?.absoluteExpiresAt, start + 10 * hour);
    }
    t.ok(h.services.now() - start > 9 * hour, 'alive past four sliding windows');
    // Now 10 h - 5 ms after issue: the renewed window is cut at the absolute limit.
    t.equal((await recordOf(h, handle))?.expiresAt, start + 10 * hour, 'capped at the absolute limit');
    h.advance(4);
    handle = refreshTokenOf(await h.refresh('sliding', { refresh_token: handle }));
    h.advance(1);
    t.equal(await h.refreshError('sliding', { refresh_token: handle }), rejected, 'dead at the absolute limit');
  });

  t.test('a reUse token keeps its handle and slides its expiry', async (t) => {
    const h = harness(t);
    const handle = refreshTokenOf(await h.issue('sliding-reusing'));
    for (let i = 0; i < 3; i++) {
      h.advance(2 * hour - 1);
      const response = await h.refresh('sliding-reusing', { refresh_token: handle });
      t.equal(response.refresh_token, handle);
      t.equal((await recordOf(h, handle))?.expiresAt, h.services.now() + 2 * hour, 'the stored expiry moved');
    }
    h.advance(2 * hour);
    t.equal(await h.refreshError('sliding-reusing', { refresh_token: handle }), rejected, 'refused after a full window unused');
  });
});

t.test('rotation', async (t) => {
  t.test('oneTimeOnly returns a new handle in the same family and retires the old one', async (t) => {
    const h = harness(t);
    const first = refreshTokenOf(await h.issue('rotating'));
    const second = refreshTokenOf(await h.refresh('rotating', { refresh_token: first }));
    t.not(second, first);
    t.equal(parseRefreshHandle(second)?.family, parseRefreshHandle(first)?.family);
    t.equal(await recordOf(h, first), null, 'the old token is retired');
    t.ok(await recordOf(h, second));
  });

  t.test('reUse returns the same handle, usable again and again', async (t) => {
    const h = harness(t);
    const handle = refreshTokenOf(await h.issue('reusing'));
    for (let i = 0; i < 3; i++) {
      const response = await h.refresh('reusing', { refresh_token: handle });
      t.equal(response.refresh_token, handle);
    }
  });

  t.test('issues a fresh access token with the subject and the claims of the original grant', async (t) => {
    const h = harness(t);
    const issued = await h.issue('rotating');
    h.advance(60_000);
    const refreshed = await h.refresh('rotating', { refresh_token: refreshTokenOf(issued) });
    const before = decodeJwt(issued.access_token);
    const after = decodeJwt(refreshed.access_token);
    t.not(after.jti, before.jti);
    t.equal(after.iat, (before.iat as number) + 60);
    t.match(after, { sub: 'sub-alice', client_id: 'rotating', idp: 'local', amr: ['pwd'], auth_time: before.auth_time });
    t.equal(refreshed.scope, 'openid api1 api2 offline_access');
    t.equal(refreshed.expires_in, 3600);
  });
});

t.test('issued access tokens', async (t) => {
  for (const clientId of ['rotating', 'reusing']) {
    t.test(`${clientId}: each refresh lists its access token in the family by id and expiry, never the token itself`, async (t) => {
      const h = harness(t);
      const issued = await h.issue(clientId);
      const handle = refreshTokenOf(issued);
      const second = await h.refresh(clientId, { refresh_token: handle });
      const third = await h.refresh(clientId, { refresh_token: refreshTokenOf(second) });
      const family = parseRefreshHandle(handle)?.family ?? '';
      const listed = await h.store.familyRecords<Record<string, unknown>>(issuedTokensFamily(family), 'at');
      const expected = [issued, second, third].map((response) => {
        const claims = decodeJwt(response.access_token);
        return { jti: claims.jti, exp: claims.exp };
      });
      const byJti = (a: Record<string, unknown>, b: Record<string, unknown>) => String(a.jti).localeCompare(String(b.jti));
      t.same(listed.sort(byJti), expected.sort(byJti));
      for (const record of listed) t.same(Object.keys(record).sort(), ['exp', 'jti'], 'no token text in the store');
    });
  }
});

t.test('scope', async (t) => {
  t.test('narrows the access token and keeps the original scope on the refresh token', async (t) => {
    const h = harness(t);
    const first = refreshTokenOf(await h.issue('rotating'));
    const narrowed = await h.refresh('rotating', { refresh_token: first, scope: 'api1' });
    t.equal(narrowed.scope, 'api1');
    t.match(decodeJwt(narrowed.access_token), { scope: 'api1', aud: 'urn:api1' });
    const second = refreshTokenOf(narrowed);
    t.same((await recordOf(h, second))?.scopes, ['openid', 'api1', 'api2', 'offline_access']);
    const full = await h.refresh('rotating', { refresh_token: second });
    t.equal(full.scope, 'openid api1 api2 offline_access', 'a later refresh without scope gets everything back');
  });

  t.test('refuses a wider scope with invalid_scope and leaves the token usable', async (t) => {
    const h = harness(t);
    const handle = refreshTokenOf(await h.issue('rotating', 'api1 offline_access'));
    t.equal(
      await h.refreshError('rotating', { refresh_token: handle, scope: 'api1 api2' }),
      'invalid_scope: The requested scope exceeds the scope originally granted.',
    );
    t.equal((await h.refresh('rotating', { refresh_token: handle })).scope, 'api1 offline_access');
  });

  t.test('an empty scope parameter keeps the original scope rather than the client default', async (t) => {
    const h = harness(t);
    for (const scope of ['', ' ']) {
      const handle = refreshTokenOf(await h.issue('rotating', 'api1 offline_access'));
      const response = await h.refresh('rotating', { refresh_token: handle, scope });
      t.equal(response.scope, 'api1 offline_access', JSON.stringify(scope));
    }
  });
});

t.test('reuse detection (RFC 9700 §4.14.2)', async (t) => {
  t.test('a retired token presented again is refused and revokes the whole family', async (t) => {
    const h = harness(t);
    const issued = await h.issue('rotating');
    const first = refreshTokenOf(issued);
    const secondResponse = await h.refresh('rotating', { refresh_token: first });
    const second = refreshTokenOf(secondResponse);
    const thirdResponse = await h.refresh('rotating', { refresh_token: second });
    const third = refreshTokenOf(thirdResponse);
    const jtis = [issued, secondResponse, thirdResponse].map((r) => decodeJwt(r.access_token).jti as string);

    t.equal(await h.refreshError('rotating', { refresh_token: first }), rejected, 'the replay is refused');
    t.equal(await h.refreshError('rotating', { refresh_token: third }), rejected, 'the live successor is dead too');
    t.equal(await h.refreshError('rotating', { refresh_token: second }), rejected);
    t.equal(await recordOf(h, third), null);
    t.ok(await h.store.isFamilyRevoked(parseRefreshHandle(first)?.family ?? ''));
    for (const jti of jtis) t.equal(await h.store.get({ kind: 'jti', id: jti }), 1, `access token ${jti} is on the deny list`);
  });

  t.test('the deny list holds each access token only until it would have expired', async (t) => {
    const h = harness(t);
    const issued = await h.issue('strict');
    const first = refreshTokenOf(issued);
    await h.refresh('strict', { refresh_token: first });
    await h.refreshError('strict', { refresh_token: first });
    const jti = decodeJwt(issued.access_token).jti as string;
    h.advance(hour - 1);
    t.equal(await h.store.get({ kind: 'jti', id: jti }), 1);
    h.advance(1);
    t.equal(await h.store.get({ kind: 'jti', id: jti }), null);
  });

  t.test('a retired token presented by another client revokes nothing', async (t) => {
    const h = harness(t);
    const first = refreshTokenOf(await h.issue('rotating'));
    const second = refreshTokenOf(await h.refresh('rotating', { refresh_token: first }));
    t.equal(await h.refreshError('other', { refresh_token: first }), rejected);
    t.ok(await h.refresh('rotating', { refresh_token: second }), 'the family lives on');
  });

  t.test('tokens of other families are untouched', async (t) => {
    const h = harness(t);
    const mine = refreshTokenOf(await h.issue('strict'));
    const neighbour = refreshTokenOf(await h.issue('strict'));
    await h.refresh('strict', { refresh_token: mine });
    await h.refreshError('strict', { refresh_token: mine });
    t.ok(await h.store.isFamilyRevoked(parseRefreshHandle(mine)?.family ?? ''), 'the reuse revoked its family');
    t.ok(await h.refresh('strict', { refresh_token: neighbour }));
  });
});

t.test('grace window after a lost answer (refreshTokenReuseGraceSeconds, default 5 s)', async (t) => {
  const familyOf = (handle: string) => parseRefreshHandle(handle)?.family ?? '';

  t.test('a retired token presented again within the window gets the same successor and a fresh access token', async (t) => {
    const h = harness(t);
    const first = refreshTokenOf(await h.issue('rotating'));
    // The client never saw this answer.
    const lost = await h.refresh('rotating', { refresh_token: first });
    h.advance(4999);
    const retried = await h.refresh('rotating', { refresh_token: first, scope: 'api1' });
    t.equal(retried.refresh_token, lost.refresh_token, 'the same successor: one chain, not two');
    t.not(decodeJwt(retried.access_token).jti, decodeJwt(lost.access_token).jti, 'a fresh access token');
    t.match(decodeJwt(retried.access_token), { sub: 'sub-alice', client_id: 'rotating', scope: 'api1' }, 'the retry may narrow its scope');
    t.notOk(await h.store.isFamilyRevoked(familyOf(first)), 'no family revoked');
    const again = await h.refresh('rotating', { refresh_token: first });
    t.equal(again.refresh_token, lost.refresh_token, 'every retry in the window gets it');
    const next = await h.refresh('rotating', { refresh_token: refreshTokenOf(retried) });
    t.type(next.refresh_token, 'string', 'and the chain continues from it');
  });

  t.test('presented again once the window is over, it is reuse and revokes the family', async (t) => {
    const h = harness(t);
    const first = refreshTokenOf(await h.issue('rotating'));
    const second = refreshTokenOf(await h.refresh('rotating', { refresh_token: first }));
    h.advance(5000);
    t.equal(await h.refreshError('rotating', { refresh_token: first }), rejected);
    t.ok(await h.store.isFamilyRevoked(familyOf(first)));
    t.equal(await h.refreshError('rotating', { refresh_token: second }), rejected, 'the unused successor is dead');
  });

  t.test('presented again after its successor was used, it is reuse and revokes the family, in the window too', async (t) => {
    const h = harness(t);
    const issued = await h.issue('rotating');
    const first = refreshTokenOf(issued);
    const secondResponse = await h.refresh('rotating', { refresh_token: first });
    const thirdResponse = await h.refresh('rotating', { refresh_token: refreshTokenOf(secondResponse) });
    h.advance(1000);
    t.equal(await h.refreshError('rotating', { refresh_token: first }), rejected);
    t.ok(await h.store.isFamilyRevoked(familyOf(first)));
    t.equal(await h.refreshError('rotating', { refresh_token: refreshTokenOf(thirdResponse) }), rejected, 'the live token is dead');
    for (const response of [issued, secondResponse, thirdResponse]) {
      t.equal(await h.store.get({ kind: 'jti', id: decodeJwt(response.access_token).jti as string }), 1, 'every access token is denied');
    }
  });

  t.test("a retry's access token is recorded in the family: a later reuse denies it", async (t) => {
    const h = harness(t);
    const first = refreshTokenOf(await h.issue('rotating'));
    await h.refresh('rotating', { refresh_token: first });
    const retried = await h.refresh('rotating', { refresh_token: first });
    h.advance(5000);
    t.equal(await h.refreshError('rotating', { refresh_token: first }), rejected);
    t.equal(await h.store.get({ kind: 'jti', id: decodeJwt(retried.access_token).jti as string }), 1);
  });

  t.test('refreshTokenReuseGraceSeconds 0 keeps strict reuse detection', async (t) => {
    const h = harness(t);
    const first = refreshTokenOf(await h.issue('strict'));
    const second = refreshTokenOf(await h.refresh('strict', { refresh_token: first }));
    t.equal(await h.refreshError('strict', { refresh_token: first }), rejected, 'refused at once');
    t.ok(await h.store.isFamilyRevoked(familyOf(first)));
    t.equal(await h.refreshError('strict', { refresh_token: second }), rejected);
  });

  t.test('another client presenting it within the window gets nothing and revokes nothing', async (t) => {
    const h = harness(t);
    const first = refreshTokenOf(await h.issue('rotating'));
    const second = refreshTokenOf(await h.refresh('rotating', { refresh_token: first }));
    t.equal(await h.refreshError('other', { refresh_token: first }), rejected);
    t.notOk(await h.store.isFamilyRevoked(familyOf(first)));
    t.type((await h.refresh('rotating', { refresh_token: second })).refresh_token, 'string');
  });

  t.test('concurrent refreshes of one token all get the one successor', async (t) => {
    const h = harness(t);
    const first = refreshTokenOf(await h.issue('rotating'));
    const answers = await Promise.all(Array.from({ length: 10 }, () => h.refresh('rotating', { refresh_token: first })));
    t.same([...new Set(answers.map(refreshTokenOf))].length, 1, 'one successor');
    t.equal(new Set(answers.map((a) => decodeJwt(a.access_token).jti)).size, 10, 'ten access tokens');
    t.notOk(await h.store.isFamilyRevoked(familyOf(first)));
  });

  t.test('the retry record holds a nonce only: the successor follows from it with the old handle and for its client', async (t) => {
    const h = harness(t);
    const first = refreshTokenOf(await h.issue('rotating'));
    const second = refreshTokenOf(await h.refresh('rotating', { refresh_token: first }));
    const retired = parseRefreshHandle(first) as NonNullable<ReturnType<typeof parseRefreshHandle>>;
    const found = await h.store.chainLookup<RefreshTokenRecord, RetryRecord>(retired.key, 5000, chainLimits);
    if (found.status !== 'retry') throw new Error(`no retry value: ${found.status}`);
    const record = found.retry;
    t.same(Object.keys(record).sort(), ['n', 'v'], 'a version and a nonce');
    t.equal(Buffer.from(JSON.stringify(record)).indexOf(Buffer.from(second)), -1, 'not the handle');
    t.equal(openRetryRecord(retired, record, 'rotating'), second, 'the old handle leads to it');
    t.not(openRetryRecord(retired, record, 'other'), second, 'not for another client');
    const stranger = parseRefreshHandle(refreshTokenOf(await h.issue('rotating')));
    t.not(openRetryRecord(stranger as NonNullable<typeof stranger>, record, 'rotating'), second, 'not another handle');
    h.advance(5000);
    t.equal((await h.store.chainLookup(retired.key, 5000, chainLimits)).status, 'replayed', 'it serves for the window only');
  });

  t.test('the window counts from the moment the store applied the rotation, not from the request', async (t) => {
    const h = harness(t);
    const first = refreshTokenOf(await h.issue('rotating'));
    const realGet = h.store.get.bind(h.store);
    let down = false;
    // The store holds the rotation 20 s (a stalled Redis), applies it, and the answer is lost;
    // so is the read of the successor that follows.
    const restoreRotation = hookRotation(h.store, async (apply) => {
      h.advance(20_000);
      await apply();
      down = true;
      throw new StoreUnavailableError('rotate got no answer within 500 ms');
    });
    h.store.get = (async (...args: Parameters<MemoryStore['get']>) => {
      if (down) throw new StoreUnavailableError('get got no answer within 500 ms');
      return realGet(...args);
    }) as MemoryStore['get'];
    // The grant asks whether the successor is live with writeWhileLive (so a Redis store WAITs).
    const realWriteWhileLive = h.store.writeWhileLive.bind(h.store);
    h.store.writeWhileLive = (async (...args: Parameters<MemoryStore['writeWhileLive']>) => {
      if (down) throw new StoreUnavailableError('writeWhileLive got no answer within 500 ms');
      return realWriteWhileLive(...args);
    }) as MemoryStore['writeWhileLive'];
    // A one-trip rotation asks the chain instead (its lookup, also a write that WAITs).
    const realChainLookup = h.store.chainLookup.bind(h.store);
    h.store.chainLookup = (async (...args: Parameters<MemoryStore['chainLookup']>) => {
      if (down) throw new StoreUnavailableError('chainLookup got no answer within 500 ms');
      return realChainLookup(...args);
    }) as MemoryStore['chainLookup'];
    await t.rejects(h.refresh('rotating', { refresh_token: first }), StoreUnavailableError, 'the client gets 503');
    restoreRotation();
    h.store.get = realGet;
    h.store.writeWhileLive = realWriteWhileLive;
    h.store.chainLookup = realChainLookup;
    h.store.chainLookup = realChainLookup;
    h.advance(4999);
    const retried = refreshTokenOf(await h.refresh('rotating', { refresh_token: first }));
    const again = refreshTokenOf(await h.refresh('rotating', { refresh_token: first }));
    t.equal(again, retried, 'a retry at T + grace − 1 ms gets the same successor, again');
    h.advance(2);
    t.equal(await h.refreshError('rotating', { refresh_token: first }), rejected, 'at T + grace + 1 ms it is reuse');
    t.ok(await h.store.isFamilyRevoked(familyOf(first)), 'which revokes the family');
  });
});

t.test('a rotation applied after its answer timed out still returns the successor', async (t) => {
  const h = harness(t);
  const first = await h.issue('rotating');
  // The store runs the rotation, then the answer is "lost": what a late Redis reply looks like.
  const restoreRotation = hookRotation(h.store, async (apply) => {
    await apply();
    throw new StoreUnavailableError('rotate got no answer within 500 ms');
  });
  const second = await h.refresh('rotating', { refresh_token: first.refresh_token as string });
  t.type(second.refresh_token, 'string');
  t.not(second.refresh_token, first.refresh_token);
  restoreRotation();
  const third = await h.refresh('rotating', { refresh_token: second.refresh_token as string });
  t.type(third.access_token, 'string', 'the successor it returned works');
});

t.test('a rotation applied after the store stopped answering: 503, and the retry within the window gets its successor', async (t) => {
  const h = harness(t);
  const first = refreshTokenOf(await h.issue('rotating'));
  const realGet = h.store.get.bind(h.store);
  let down = false;
  // Redis held the script and ran it late; meanwhile nothing it answered reached the gateway.
  const restoreRotation = hookRotation(h.store, async (apply) => {
    await apply();
    down = true;
    throw new StoreUnavailableError('rotate got no answer within 500 ms');
  });
  h.store.get = (async (...args: Parameters<MemoryStore['get']>) => {
    if (down) throw new StoreUnavailableError('get got no answer within 500 ms');
    return realGet(...args);
  }) as MemoryStore['get'];
  const realWriteWhileLive = h.store.writeWhileLive.bind(h.store);
  h.store.writeWhileLive = (async (...args: Parameters<MemoryStore['writeWhileLive']>) => {
    if (down) throw new StoreUnavailableError('writeWhileLive got no answer within 500 ms');
    return realWriteWhileLive(...args);
  }) as MemoryStore['writeWhileLive'];
  // A one-trip rotation asks the chain instead (its lookup, also a write that WAITs).
  const realChainLookup = h.store.chainLookup.bind(h.store);
  h.store.chainLookup = (async (...args: Parameters<MemoryStore['chainLookup']>) => {
    if (down) throw new StoreUnavailableError('chainLookup got no answer within 500 ms');
    return realChainLookup(...args);
  }) as MemoryStore['chainLookup'];
  await t.rejects(h.refresh('rotating', { refresh_token: first }), StoreUnavailableError, 'the client gets 503');
  restoreRotation();
  h.store.get = realGet;
  h.store.writeWhileLive = realWriteWhileLive;
  h.advance(2000);
  const retried = await h.refresh('rotating', { refresh_token: first });
  t.type(retried.refresh_token, 'string', 'the retry is answered');
  t.type((await h.refresh('rotating', { refresh_token: refreshTokenOf(retried) })).refresh_token, 'string', 'with the live successor');
});

// Issue 36: with `waitForReplicas`, a rotation whose WAIT failed stands on the master but no
// replica holds it; a failover then loses it. Its successor must not be answered because the
// master still shows it: the check that it was applied goes through writeWhileLive, which a Redis
// store follows with WAIT (here failing, as on a master whose replica was promoted).
t.test('a rotation no replica acknowledged is not answered with its successor: 503, and the retry continues the chain', async (t) => {
  const h = harness(t);
  const first = refreshTokenOf(await h.issue('rotating'));
  const realWriteWhileLive = h.store.writeWhileLive.bind(h.store);
  const restoreRotation = hookRotation(h.store, async (apply) => {
    await apply();
    throw new StoreUnavailableError('rotate: 0 of 1 replicas acknowledged the write');
  });
  h.store.writeWhileLive = (async () => {
    throw new StoreUnavailableError('writeWhileLive: 0 of 1 replicas acknowledged the write');
  }) as MemoryStore['writeWhileLive'];
  const realChainLookup = h.store.chainLookup.bind(h.store);
  h.store.chainLookup = (async () => {
    throw new StoreUnavailableError('chainLookup: 0 of 1 replicas acknowledged the write');
  }) as MemoryStore['chainLookup'];
  await t.rejects(
    h.refresh('rotating', { refresh_token: first }),
    StoreUnavailableError,
    'the client gets 503, not the unreplicated successor',
  );
  restoreRotation();
  h.store.writeWhileLive = realWriteWhileLive;
  h.store.chainLookup = realChainLookup;
  const retried = await h.refresh('rotating', { refresh_token: first });
  t.type(retried.refresh_token, 'string', 'the retry is answered');
  t.type((await h.refresh('rotating', { refresh_token: refreshTokenOf(retried) })).refresh_token, 'string', 'and its chain continues');
});

t.test('a rotation that did not happen answers with the store error and keeps the old token', async (t) => {
  const h = harness(t);
  const first = await h.issue('rotating');
  const restoreRotation = hookRotation(h.store, async () => {
    throw new StoreUnavailableError('connection refused');
  });
  await t.rejects(h.refresh('rotating', { refresh_token: first.refresh_token as string }), StoreUnavailableError);
  restoreRotation();
  const again = await h.refresh('rotating', { refresh_token: first.refresh_token as string });
  t.type(again.refresh_token, 'string', 'the old token still works');
});

t.test('refreshTokenRotationsPerMinute: a family past its rate gets 429 with Retry-After, and nothing is rotated', async (t) => {
  const h = harness(t);
  const first = refreshTokenOf(await h.issue('limited'));
  const second = refreshTokenOf(await h.refresh('limited', { refresh_token: first }));
  // A retry within the grace window counts too: it issues an access token.
  t.equal(refreshTokenOf(await h.refresh('limited', { refresh_token: first })), second);
  h.advance(10_000);
  const third = refreshTokenOf(await h.refresh('limited', { refresh_token: second }));
  h.advance(20_000);
  const refused = await h.refresh('limited', { refresh_token: third }).then(
    () => undefined,
    (err: unknown) => err,
  );
  t.type(refused, OAuthError, 'the fourth issuance in the minute is refused');
  const err = refused as OAuthError;
  t.same(
    { status: err.status, error: err.error, retryAfter: err.retryAfter },
    { status: 429, error: 'temporarily_unavailable', retryAfter: 30 },
  );
  const other = refreshTokenOf(await h.issue('limited'));
  t.type((await h.refresh('limited', { refresh_token: other })).refresh_token, 'string', 'another family has a count of its own');
  h.advance(30_000);
  const fourth = refreshTokenOf(await h.refresh('limited', { refresh_token: third }));
  t.not(fourth, third, 'once the window is over, the token that was refused rotates: it was left live');
  t.equal(await h.refreshError('limited', { refresh_token: first }), rejected, 'reuse is still reuse');
  t.ok(await h.store.isFamilyRevoked(parseRefreshHandle(first)?.family ?? ''), 'and revokes the family');
});
