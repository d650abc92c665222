// The authorization_code grant (workers/grants/authorization_code.ts, pkce.ts, and the redeem step
// of token_issuance.ts; docs/endpoints.md, RFC 6749 §4.1.3, RFC 7636, RFC 9700 §2.1.1).
// First called directly with a clock the test moves by hand: expiry at the millisecond and the ID
// token's claims. Then on the wire against real gateways (memory store, and a private
// redis-server), with codes obtained through the login and consent pages: every rejection, replay
// and race, with exact status and body.
import t, { type Test } from 'tap';
import { Redis } from 'ioredis';
import { decodeJwt } from 'jose';
import { pino } from 'pino';
import { clientSchema } from '../../../gateway/config/schema.js';
import type { UserConfig } from '../../../core/worker_config.js';
import { generateSigningKey } from '../../../gateway/keys/key_loader.js';
import { authorizationCodeGrant } from '../../../workers/grants/authorization_code.js';
import type { GrantServices, TokenResponse } from '../../../workers/grants/grant_handler.js';
import { ScopeRules } from '../../../core/rules/scope_rules.js';
import { registerClients } from '../../../core/client_model.js';
import { OAuthError } from '../../../core/oauth_errors.js';
import type { FormParams } from '../../../wire/token_task.js';
import { hashHandle } from '../../../core/store/handle.js';
import { MemoryStore } from '../../../core/store/memory_store.js';
import type { AuthorizationCodeRecord } from '../../../core/records/authorization_code_record.js';
import { IdTokenBuilder, tokenHash } from '../../../workers/tokens/id_token.js';
import { JwtSigner } from '../../../workers/tokens/jwt_signer.js';
import { newFamilyHandle, newFamilyId, parseFamilyHandle, parseRefreshHandle } from '../../../core/records/refresh_token_handle.js';
import { refreshExpiry } from '../../../workers/tokens/refresh_token_record.js';
import { AuthorizeFlow, callbackUri, codeFlowClient, pkcePair, s256 } from '../../helpers/authorize_flow.js';
import { addPasswordFixtures, passwordFixtures } from '../../helpers/password_users.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { formPost, releaseAtOnce } from '../../helpers/release_at_once.js';
import { startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';

const invalidCode = 'invalid_grant: The authorization code is invalid, expired or already used.';
const invalidCodeBody = '{"error":"invalid_grant","error_description":"The authorization code is invalid, expired or already used."}';
const invalidRefreshBody = '{"error":"invalid_grant","error_description":"The refresh token is invalid, expired or revoked."}';
const inactive = { active: false };

t.test('called directly, with a clock', async (t) => {
  const issuer = 'https://tessera.test';
  const signingKey = await generateSigningKey('ES256');
  const clients = registerClients([
    clientSchema.parse({ ...codeFlowClient('web'), authorizationCodeLifetime: 300, identityTokenLifetime: 300 }),
  ]);
  const web = clients.get('web');
  if (web === undefined) throw new Error('no client');
  const identityResources = [
    { name: 'openid', claims: ['sub'] },
    { name: 'profile', claims: ['name'] },
  ];
  const alice: UserConfig = {
    subjectId: 'sub-alice',
    username: 'alice',
    passwordHash: 'unused',
    enabled: true,
    idp: 'local',
    claims: { name: 'Alice', email: 'a@x' },
  };
  const { verifier, challenge } = pkcePair();

  const harness = (t: Test) => {
    // One clock for the grant (epoch ms) and the store (TTLs), as on a real gateway.
    let clock = Date.UTC(2030, 0, 1);
    const now = () => clock;
    const store = new MemoryStore({ now });
    t.teardown(() => store.close());
    // Every store call the grant makes, by method.
    const calls: string[] = [];
    const counted = new Proxy(store, {
      get(target, name, receiver) {
        const value: unknown = Reflect.get(target, name, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          calls.push(String(name));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const services: GrantServices = {
      issuer,
      clients,
      scopes: new ScopeRules({ identityResources, apiScopes: [{ name: 'api1' }], apiResources: [{ name: 'urn:api1', scopes: ['api1'] }] }),
      signer: new JwtSigner(signingKey),
      idTokens: new IdTokenBuilder({ identityResources, users: [alice] }, issuer, 'ES256'),
      store: counted,
      now,
      logger: pino({ level: 'silent' }),
    };
    return {
      store,
      calls,
      advance: (ms: number) => (clock += ms),
      now,
      /** Stores a code the way the consent page does (gateway/pages/authorize_endpoint.ts). */
      async storeCode(scopes = ['openid', 'profile', 'api1']): Promise<string> {
        const family = newFamilyId();
        const handle = newFamilyHandle('code', family);
        const record: AuthorizationCodeRecord = {
          v: 1,
          clientId: 'web',
          redirectUri: callbackUri,
          subject: 'sub-alice',
          scopes,
          claims: { auth_time: Math.floor(clock / 1000) - 30, idp: 'local', amr: ['pwd'] },
          nonce: 'n-1',
          sid: 'sid-1',
          codeChallenge: challenge,
          family,
          createdAt: clock,
        };
        await store.set(handle.key, record, web.config.authorizationCodeLifetime * 1000);
        return handle.handle;
      },
      redeem: async (params: FormParams): Promise<TokenResponse> =>
        authorizationCodeGrant.handle({ grantType: 'authorization_code', client: web, params }, services),
    };
  };
  const errorOf = (promise: Promise<unknown>): Promise<string> =>
    promise.then(
      () => 'no error',
      (err: unknown) => (err instanceof OAuthError ? `${err.error}: ${err.description}` : Promise.reject(err)),
    );
  const params = (code: string): FormParams => ({ code, redirect_uri: callbackUri, code_verifier: verifier });

  t.test('redeems a code until the last millisecond of authorizationCodeLifetime', async (t) => {
    const h = harness(t);
    const code = await h.storeCode();
    h.advance(299_999);
    t.type((await h.redeem(params(code))).access_token, 'string');
  });

  t.test('refuses a code once authorizationCodeLifetime has passed: the store TTL ended it', async (t) => {
    const h = harness(t);
    const code = await h.storeCode();
    h.advance(300_000);
    t.equal(await errorOf(h.redeem(params(code))), invalidCode);
  });

  t.test('issues an ID token with iss, sub, aud, exp, iat, auth_time, nonce, at_hash, sid and the identity claims granted', async (t) => {
    const h = harness(t);
    const response = await h.redeem(params(await h.storeCode()));
    t.equal(response.scope, 'openid profile api1');
    t.equal(response.refresh_token, undefined, 'no offline_access, no refresh token');
    const now = Math.floor(h.now() / 1000);
    t.same(decodeJwt(response.id_token as string), {
      iss: issuer,
      sub: 'sub-alice',
      aud: 'web',
      exp: now + 300,
      iat: now,
      auth_time: now - 30,
      nonce: 'n-1',
      at_hash: tokenHash(response.access_token, 'ES256'),
      sid: 'sid-1',
      name: 'Alice',
    });
  });

  t.test(
    'a redemption is one store call, which consumes the code and writes its refresh token (docs/storage.md, "One round trip per redemption")',
    async (t) => {
      const h = harness(t);
      // In the rules' order, as the consent page stores them (resolved): the refresh token copies them.
      const code = await h.storeCode(['openid', 'api1', 'offline_access']);
      h.calls.length = 0;
      const response = await h.redeem(params(code));
      t.same(h.calls, ['redeemRecord'], 'one call');
      const refresh = parseRefreshHandle(response.refresh_token as string);
      if (refresh === undefined) throw new Error('no refresh token');
      const now = h.now();
      t.same(
        await h.store.get(refresh.key),
        {
          v: 1,
          clientId: 'web',
          family: (parseFamilyHandle('code', code) as { family: string }).family,
          createdAt: now,
          absoluteExpiresAt: now + web.config.absoluteRefreshTokenLifetime * 1000,
          expiresAt: refreshExpiry(web.config, now + web.config.absoluteRefreshTokenLifetime * 1000, now),
          subject: 'sub-alice',
          scopes: ['openid', 'api1', 'offline_access'],
          claims: { auth_time: Math.floor(now / 1000) - 30, idp: 'local', amr: ['pwd'] },
          openId: { sid: 'sid-1' },
        },
        'the refresh token: the record the two-step redemption writes',
      );
      t.equal(await errorOf(h.redeem(params(code))), invalidCode, 'the code is spent');
      t.equal(await h.store.get(refresh.key), null, 'and its replay revoked the family');
    },
  );

  t.test('issues no ID token without openid', async (t) => {
    const h = harness(t);
    const response = await h.redeem(params(await h.storeCode(['api1'])));
    t.equal(response.id_token, undefined);
    t.equal(response.scope, 'api1');
  });
});

t.test('on the wire', async (t) => {
  const fixtures = await passwordFixtures();
  const redis = await startRedisServer();
  t.teardown(() => redis.stop());
  if (redis.warning) t.comment(redis.warning);
  const keyPrefix = 'authcode-test:';

  const patchFor = (store: Record<string, unknown>, threads: number) => (raw: Record<string, unknown>) => {
    addPasswordFixtures(raw, fixtures);
    raw.store = store;
    raw.workers = { threads };
    (raw.clients as unknown[]).push(
      codeFlowClient('web'),
      codeFlowClient('web2'),
      codeFlowClient('no-pkce', { requirePkce: false }),
      codeFlowClient('spa', {
        requireClientSecret: false,
        clientSecrets: [],
        allowOfflineAccess: false,
        allowedScopes: ['openid', 'api1'],
      }),
      codeFlowClient('short', { authorizationCodeLifetime: 1 }),
    );
  };
  const [memoryGw, redisGw] = await Promise.all([
    startTestGateway(t, { patch: patchFor({ type: 'memory' }, 1) }),
    // Two threads: the 50 redemptions race across threads and Redis connections.
    startTestGateway(t, { patch: patchFor({ type: 'redis', url: redis.url, keyPrefix }, 2) }),
  ]);

  /** A signed-in browser at `gw` (single sign-on: each code then costs two requests). */
  const signedIn = async (gw: TestGateway) => {
    const flow = new AuthorizeFlow(gw);
    const { challenge } = pkcePair();
    await flow.code(flow.params('web', challenge));
    return flow;
  };
  const [memoryFlow, redisFlow] = await Promise.all([signedIn(memoryGw), signedIn(redisGw)]);

  /** A fresh code of `clientId` with its verifier. */
  const codeOf = async (flow: AuthorizeFlow, clientId = 'web', extra: Record<string, string> = {}) => {
    const { verifier, challenge } = pkcePair();
    const response = await flow.code(flow.params(clientId, challenge, extra));
    return { code: response.get('code') as string, verifier };
  };
  const secret = (clientId: string) => ({ clientId, secret: 'secret' });
  const redeemParams = (code: string, verifier: string | undefined, extra: Record<string, string> = {}): Record<string, string> => ({
    grant_type: 'authorization_code',
    code,
    redirect_uri: callbackUri,
    ...(verifier === undefined ? {} : { code_verifier: verifier }),
    ...extra,
  });
  const expectRejected = async (
    t: Test,
    flow: AuthorizeFlow,
    params: Record<string, string>,
    auth: { clientId: string; secret?: string },
    body = invalidCodeBody,
    status = 400,
  ) => {
    const answer = await flow.token(params, auth);
    t.equal(answer.status, status);
    t.equal(answer.body, body);
    t.equal(answer.headers.get('cache-control'), 'no-store');
    t.equal(answer.headers.get('pragma'), 'no-cache');
  };
  const expectTokens = async (
    t: Test,
    flow: AuthorizeFlow,
    params: Record<string, string>,
    auth: { clientId: string; secret?: string },
  ) => {
    const answer = await flow.token(params, auth);
    t.equal(answer.status, 200, answer.status === 200 ? 'tokens issued' : answer.body);
    return JSON.parse(answer.body) as { access_token: string; refresh_token?: string; id_token?: string; scope: string };
  };

  const replayScenarios = (t: Test, flow: AuthorizeFlow) => {
    const gw = flow.gw;

    t.test('redeems a code once: tokens with no-store headers', async (t) => {
      const { code, verifier } = await codeOf(flow);
      const answer = await flow.token(redeemParams(code, verifier), secret('web'));
      t.equal(answer.status, 200);
      t.equal(answer.headers.get('cache-control'), 'no-store');
      t.equal(answer.headers.get('pragma'), 'no-cache');
      const body = JSON.parse(answer.body) as Record<string, unknown>;
      t.same(Object.keys(body).sort(), ['access_token', 'expires_in', 'id_token', 'refresh_token', 'scope', 'token_type']);
      t.match(body, { token_type: 'Bearer', expires_in: 3600, scope: 'openid api1 offline_access' });
      t.match(decodeJwt(body.id_token as string), { iss: gw.config.issuer, sub: 'sub-alice', aud: 'web', nonce: 'n-456' });
    });

    t.test('a second redemption is invalid_grant and revokes what the first issued', async (t) => {
      const { code, verifier } = await codeOf(flow);
      const first = await expectTokens(t, flow, redeemParams(code, verifier), secret('web'));
      t.match(await flow.introspect(first.access_token, 'web'), { active: true, sub: 'sub-alice' });
      await expectRejected(t, flow, redeemParams(code, verifier), secret('web'));
      t.same(await flow.introspect(first.access_token, 'web'), inactive, 'the first access token is on the deny list');
      t.same(await flow.introspect(first.refresh_token as string, 'web'), inactive, 'the first refresh token is revoked');
      await expectRejected(
        t,
        flow,
        { grant_type: 'refresh_token', refresh_token: first.refresh_token as string },
        secret('web'),
        invalidRefreshBody,
      );
      await expectRejected(t, flow, redeemParams(code, verifier), secret('web'), invalidCodeBody);
    });

    t.test('of 50 redemptions of one code released at once, exactly one succeeds', async (t) => {
      const { code, verifier } = await codeOf(flow);
      const request = formPost('/connect/token', redeemParams(code, verifier), secret('web'));
      const answers = await releaseAtOnce(
        Array.from({ length: 50 }, () => gw.port),
        request,
      );
      const winners = answers.filter((a) => a.status === 200);
      t.equal(winners.length, 1, 'exactly one 200');
      t.same(
        [...new Set(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.body}`))],
        [`400 ${invalidCodeBody}`],
        'the other 49 are invalid_grant',
      );
      // RFC 6749 §4.1.2: the 49 are replays, so what the winner got is revoked too.
      const won = JSON.parse(winners[0]?.body ?? '{}') as { access_token: string; refresh_token: string };
      t.same(await flow.introspect(won.access_token, 'web'), inactive);
      t.same(await flow.introspect(won.refresh_token, 'web'), inactive);
    });
  };

  t.test('memory store', async (t) => replayScenarios(t, memoryFlow));
  t.test('redis store', async (t) => replayScenarios(t, redisFlow));

  t.test('binding to the client and the redirect URI', async (t) => {
    const flow = memoryFlow;

    t.test('refuses a code issued to another client, and leaves it to its own', async (t) => {
      const { code, verifier } = await codeOf(flow);
      await expectRejected(t, flow, redeemParams(code, verifier), secret('web2'));
      await expectRejected(t, flow, redeemParams(code, verifier), { clientId: 'spa' });
      const tokens = await expectTokens(t, flow, redeemParams(code, verifier), secret('web'));
      t.match(await flow.introspect(tokens.access_token, 'web'), { active: true }, 'the other client revoked nothing');
    });

    t.test('refuses a redirect_uri other than the authorization request’s, and leaves the code', async (t) => {
      const { code, verifier } = await codeOf(flow);
      for (const uri of [`${callbackUri}/`, 'http://127.0.0.1:5002/Callback', `${callbackUri}?x=1`, 'https://evil.example/callback']) {
        await expectRejected(t, flow, redeemParams(code, verifier, { redirect_uri: uri }), secret('web'));
      }
      await expectTokens(t, flow, redeemParams(code, verifier), secret('web'));
    });

    t.test('requires redirect_uri and code: invalid_request', async (t) => {
      const { code, verifier } = await codeOf(flow);
      const required = '{"error":"invalid_request","error_description":"The code and redirect_uri parameters are required."}';
      const { redirect_uri: _, ...withoutUri } = redeemParams(code, verifier);
      await expectRejected(t, flow, withoutUri, secret('web'), required);
      const { code: __, ...withoutCode } = redeemParams(code, verifier);
      await expectRejected(t, flow, withoutCode, secret('web'), required);
      await expectTokens(t, flow, redeemParams(code, verifier), secret('web'));
    });

    t.test('refuses a code that is not one of ours', async (t) => {
      const { code, verifier } = await codeOf(flow);
      // The last character changed to another one: 'A' for a code that does not already end in it.
      const otherLast = code.endsWith('A') ? 'B' : 'A';
      for (const bad of [`${code.slice(0, -1)}${otherLast}`, code.slice(1), `${code}A`, 'x', code.replace(/^./, '+')]) {
        await expectRejected(t, flow, redeemParams(bad, verifier), secret('web'));
      }
    });

    t.test('refuses a refresh token presented as a code', async (t) => {
      const { code, verifier } = await codeOf(flow);
      const tokens = await expectTokens(t, flow, redeemParams(code, verifier), secret('web'));
      await expectRejected(t, flow, redeemParams(tokens.refresh_token as string, verifier), secret('web'));
    });
  });

  t.test('PKCE', async (t) => {
    const flow = memoryFlow;

    t.test('refuses a wrong, missing or malformed code_verifier, and leaves the code', async (t) => {
      const { code, verifier } = await codeOf(flow);
      const { challenge } = pkcePair();
      const cases: [string, string | undefined][] = [
        ['another valid verifier', pkcePair().verifier],
        ['no verifier', undefined],
        ['an empty verifier', ''],
        ['the challenge instead of the verifier', challenge],
        ['a verifier one character short (42)', verifier.slice(1)],
        ['the verifier with one character more', `${verifier}a`],
        ['a verifier of 129 characters', 'a'.repeat(129)],
        ['a verifier with "+"', `${verifier.slice(1)}+`],
        ['a verifier with "/"', `${verifier.slice(1)}/`],
        ['a verifier with "="', `${verifier.slice(1)}=`],
        ['a verifier with a space', `${verifier.slice(1)} `],
        ['a verifier with a non-ASCII letter', `${verifier.slice(1)}é`],
      ];
      for (const [name, bad] of cases) {
        t.test(name, async (t) => expectRejected(t, flow, redeemParams(code, bad), secret('web')));
      }
      t.test('then the right verifier still works', async (t) => {
        await expectTokens(t, flow, redeemParams(code, verifier), secret('web'));
      });
    });

    t.test('accepts verifiers of 43 and 128 unreserved characters', async (t) => {
      for (const verifier of ['A-._~'.repeat(8).concat('abc'), 'z9-._~Zq'.repeat(16)]) {
        const response = await flow.code(flow.params('web', s256(verifier)));
        await expectTokens(t, flow, redeemParams(response.get('code') as string, verifier), secret('web'));
      }
    });

    t.test('refuses a verifier for a code issued without a challenge (downgrade)', async (t) => {
      const { code_challenge: _, code_challenge_method: __, ...params } = flow.params('no-pkce', 'unused');
      const code = (await flow.code(params)).get('code') as string;
      await expectRejected(t, flow, redeemParams(code, pkcePair().verifier), secret('no-pkce'));
      await expectTokens(t, flow, redeemParams(code, undefined), secret('no-pkce'));
    });

    t.test('holds a client without requirePkce to the challenge it sent', async (t) => {
      const { code, verifier } = await codeOf(flow, 'no-pkce');
      await expectRejected(t, flow, redeemParams(code, undefined), secret('no-pkce'));
      await expectTokens(t, flow, redeemParams(code, verifier), secret('no-pkce'));
    });

    t.test('a public client redeems with client_id and its verifier', async (t) => {
      const { code, verifier } = await codeOf(flow, 'spa', { scope: 'openid api1' });
      await expectRejected(t, flow, redeemParams(code, undefined), { clientId: 'spa' });
      await expectRejected(t, flow, redeemParams(code, pkcePair().verifier), { clientId: 'spa' });
      const tokens = await expectTokens(t, flow, redeemParams(code, verifier), { clientId: 'spa' });
      t.equal(tokens.scope, 'openid api1');
      t.equal(tokens.refresh_token, undefined);
      t.match(decodeJwt(tokens.access_token), { client_id: 'spa', sub: 'sub-alice', aud: 'urn:api1' });
      t.match(decodeJwt(tokens.id_token as string), { aud: 'spa', sub: 'sub-alice' });
    });
  });

  t.test('expiry: a code lives authorizationCodeLifetime seconds in the store', async (t) => {
    const client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await client.connect();
    t.teardown(() => client.disconnect());
    const ttlOf = async (code: string): Promise<number> => {
      const handle = parseFamilyHandle('code', code);
      if (handle === undefined) throw new Error('not a code');
      t.equal(handle.key.id, hashHandle(code), 'the store keys the code by its SHA-256');
      return client.pttl(`${keyPrefix}{${handle.family}}:code:${handle.key.id}`);
    };

    const web = await codeOf(redisFlow, 'web');
    const webTtl = await ttlOf(web.code);
    t.ok(webTtl > 299_000 && webTtl <= 300_000, `300 s by default (PTTL ${webTtl} ms)`);

    const short = await codeOf(redisFlow, 'short');
    const shortTtl = await ttlOf(short.code);
    t.ok(shortTtl > 0 && shortTtl <= 1000, `1 s for authorizationCodeLifetime: 1 (PTTL ${shortTtl} ms)`);
    await new Promise((resolve) => setTimeout(resolve, shortTtl + 50));
    t.equal(await ttlOf(short.code), -2, 'Redis has dropped it');
    await expectRejected(t, redisFlow, redeemParams(short.code, short.verifier), secret('short'));
  });
});
