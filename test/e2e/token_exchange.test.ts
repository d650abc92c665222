// The shipped RFC 8693 token exchange validator (validators/token_exchange.ts), end to end with
// openid-client; the issued tokens verified with jose against the JWKS.
import t, { type Test } from 'tap';
import { fileURLToPath } from 'node:url';
import * as oidc from 'openid-client';
import { createRemoteJWKSet, decodeJwt, importJWK, jwtVerify, SignJWT } from 'jose';
import { hashPassword } from '../../core/crypto/password_hash.js';
import { sha256Secret, startTestGateway, writeSigningKey, type TestGateway } from '../helpers/test_gateway.js';
import { basicAuthorization } from '../helpers/basic_authorization.js';

const validatorsDir = fileURLToPath(new URL('../../validators', import.meta.url));
const tokenExchange = 'urn:ietf:params:oauth:grant-type:token-exchange';
const accessTokenType = 'urn:ietf:params:oauth:token-type:access_token';
const jwtTokenType = 'urn:ietf:params:oauth:token-type:jwt';
const form = 'application/x-www-form-urlencoded';

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

async function post(gw: TestGateway, params: Record<string, string>, clientId = 'exchanger'): Promise<Answer> {
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': form, authorization: basicAuthorization(clientId) },
    body: new URLSearchParams({ grant_type: tokenExchange, ...params }).toString(),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

function assertError(t: Test, r: Answer, error: string, description: string): void {
  t.equal(r.status, 400);
  t.equal(r.headers.get('cache-control'), 'no-store');
  t.equal(r.headers.get('pragma'), 'no-cache');
  t.same(r.body, { error, error_description: description });
}

const alicePasswordHash = await hashPassword('alice-pw');

t.test('token exchange', async (t) => {
  const client = (clientId: string, allowedGrantTypes: string[], allowedScopes: string[], extra: Record<string, unknown> = {}) => ({
    clientId,
    clientSecrets: [{ value: sha256Secret('secret') }],
    allowedGrantTypes,
    allowedScopes,
    ...extra,
  });
  const { key: signingKey, signing } = await writeSigningKey(t);
  const gw = await startTestGateway(t, {
    validatorsDir,
    watchValidators: false,
    patch: (raw) => {
      raw.signing = signing;
      raw.apiScopes = [{ name: 'api1' }, { name: 'api2' }, { name: 'api3' }];
      raw.apiResources = [
        { name: 'urn:api1', scopes: ['api1'] },
        { name: 'urn:api2', scopes: ['api2'] },
        { name: 'urn:api3', scopes: ['api3'] },
      ];
      raw.users = [{ subjectId: '818727', username: 'alice', passwordHash: alicePasswordHash }];
      (raw.clients as unknown[]).push(
        client('frontend', ['password'], ['openid', 'api1']),
        client('api1', ['delegation'], ['api2'], { audiences: ['urn:api1'] }),
        // Also a service with a token of its own, to act with.
        client('exchanger', [tokenExchange, 'client_credentials'], ['api1', 'api2'], { audiences: ['urn:api1', 'urn:api2'] }),
        // Only API 3: no token of the tests was issued to it.
        client('api3-exchanger', [tokenExchange], ['api1', 'api2'], { audiences: ['urn:api3'] }),
        // May exchange a service's own (client-only) token.
        client('service-exchanger', [tokenExchange], ['openid', 'api1', 'api2', 'offline_access'], {
          audiences: ['urn:api1'],
          allowClientTokenExchange: true,
          allowOfflineAccess: true,
        }),
      );
    },
  });
  const issuer = gw.config.issuer;
  const jwks = createRemoteJWKSet(new URL(`${gw.url}/.well-known/openid-configuration/jwks`));
  const verify = async (token: string, audience?: string) =>
    (await jwtVerify(token, jwks, { issuer, typ: 'at+jwt', ...(audience === undefined ? {} : { audience }) })).payload;
  const discover = (clientId: string) =>
    oidc.discovery(new URL(issuer), clientId, undefined, oidc.ClientSecretBasic('secret'), { execute: [oidc.allowInsecureRequests] });

  const [frontend, api1, m2m, exchanger] = await Promise.all(['frontend', 'api1', 'm2m', 'exchanger'].map(discover));
  const userToken = await oidc.genericGrantRequest(frontend!, 'password', {
    username: 'alice',
    password: 'alice-pw',
    scope: 'openid api1',
  });
  const subjectToken = userToken.access_token;
  // A user token that was itself delegated: it carries act { client_id: api1 }.
  const delegatedToken = (await oidc.genericGrantRequest(api1!, 'delegation', { token: subjectToken, scope: 'api2' })).access_token;
  // Another service's own (client-only) token.
  const actorToken = (await oidc.clientCredentialsGrant(m2m!, { scope: 'api1' })).access_token;
  // The exchanging client's own token, to act with.
  const ownActorToken = (await oidc.clientCredentialsGrant(exchanger!, { scope: 'api1' })).access_token;
  // A token signed with the gateway's key, with the claims a test needs.
  const privateKey = await importJWK(signingKey.jwk, 'ES256');
  const signed = async (claims: Record<string, unknown>) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ scope: 'api1', aud: 'urn:api1', jti: crypto.randomUUID(), ...claims })
      .setProtectedHeader({ alg: 'ES256', kid: signingKey.kid, typ: 'at+jwt' })
      .setIssuer(issuer)
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(privateKey);
  };

  t.test('impersonates: the new token is for the subject, with no act, and states its type', async (t) => {
    const tokens = await oidc.genericGrantRequest(exchanger!, tokenExchange, {
      subject_token: subjectToken,
      subject_token_type: accessTokenType,
    });
    t.equal(tokens.token_type, 'bearer');
    t.equal(tokens.issued_token_type, accessTokenType, 'RFC 8693 §2.2.1');
    t.equal(tokens.scope, 'api1 api2', "an omitted scope grants the client's allowed scopes");
    const payload = await verify(tokens.access_token);
    t.equal(payload.sub, '818727');
    t.equal(payload.client_id, 'exchanger');
    t.same(payload.aud, ['urn:api1', 'urn:api2']);
    t.notOk('act' in payload, 'impersonation adds no actor');
    const original = decodeJwt(subjectToken);
    t.same(payload.amr, original.amr, "the user's sign-in is kept, not the exchange's");
    t.equal(payload.auth_time, original.auth_time);
    t.equal(payload.idp, original.idp);
  });

  t.test('checks whose token the subject token is; each refusal is invalid_grant', async (t) => {
    const refused = async (params: Record<string, string>, clientId: string, why: string) => {
      const r = await post(gw, params, clientId);
      t.equal(r.status, 400, why);
      t.equal(r.body.error, 'invalid_grant', why);
    };
    await refused({ subject_token: actorToken, subject_token_type: accessTokenType }, 'exchanger', "a client-only token is no user's");
    const service = await post(gw, { subject_token: actorToken, subject_token_type: accessTokenType }, 'service-exchanger');
    t.equal(service.status, 200, 'unless the client may exchange client-only tokens');
    await refused(
      { subject_token: subjectToken, subject_token_type: accessTokenType },
      'api3-exchanger',
      'not issued to an API this client is',
    );

    // may_act (RFC 8693 §4.4): a user token, signed with the gateway's key, naming who may act.
    const withMayAct = (mayAct: Record<string, string>) =>
      signed({ sub: '818727', client_id: 'frontend', auth_time: Math.floor(Date.now() / 1000), may_act: mayAct });
    const named = await post(gw, { subject_token: await withMayAct({ client_id: 'exchanger' }), subject_token_type: accessTokenType });
    t.equal(named.status, 200, 'may_act naming the caller');
    await refused(
      { subject_token: await withMayAct({ client_id: 'someone-else' }), subject_token_type: accessTokenType },
      'exchanger',
      'may_act naming another party',
    );
  });

  t.test("exchanging a client-only token gives a client-only token, which no one then takes as a user's", async (t) => {
    const exchanged = await post(gw, { subject_token: actorToken, subject_token_type: accessTokenType }, 'service-exchanger');
    t.equal(exchanged.status, 200, JSON.stringify(exchanged.body));
    const laundered = exchanged.body.access_token as string;
    const payload = await verify(laundered);
    t.equal(payload.sub, 'm2m');
    t.equal(payload.client_id, 'service-exchanger');
    t.notOk('auth_time' in payload || 'amr' in payload || 'idp' in payload, 'no sign-in made up: no auth_time, amr or idp');
    t.equal(exchanged.body.scope, 'api1 api2', 'the client-only scope rules: no openid, no offline_access');
    t.notOk('refresh_token' in exchanged.body, 'and no refresh token');

    // RFC 9068 §5: neither delegation nor an exchanger without allowClientTokenExchange takes it as a user's.
    const delegated = await fetch(gw.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': form, authorization: basicAuthorization('api1') },
      body: new URLSearchParams({ grant_type: 'delegation', token: laundered, scope: 'api2' }).toString(),
    });
    t.same([delegated.status, await delegated.json()], [400, { error: 'invalid_grant' }], 'delegation refuses it');
    const again = await post(gw, { subject_token: laundered, subject_token_type: accessTokenType });
    t.same([again.status, again.body], [400, { error: 'invalid_grant' }], 'token exchange refuses it');
    const openid = await post(
      gw,
      { subject_token: actorToken, subject_token_type: accessTokenType, scope: 'openid api1' },
      'service-exchanger',
    );
    t.equal(openid.status, 400, 'identity scopes are for users');
    t.equal(openid.body.error, 'invalid_scope');
  });

  t.test('accepts the jwt token type for a subject token', async (t) => {
    const r = await post(gw, { subject_token: subjectToken, subject_token_type: jwtTokenType });
    t.equal(r.status, 200);
    t.equal(r.body.issued_token_type, accessTokenType);
  });

  t.test('states the jwt token type when it is the requested_token_type', async (t) => {
    const r = await post(gw, { subject_token: subjectToken, subject_token_type: accessTokenType, requested_token_type: jwtTokenType });
    t.equal(r.status, 200);
    t.equal(r.body.issued_token_type, jwtTokenType);
  });

  t.test('delegates with an actor token: act names the actor by sub and client_id', async (t) => {
    const tokens = await oidc.genericGrantRequest(exchanger!, tokenExchange, {
      subject_token: subjectToken,
      subject_token_type: accessTokenType,
      actor_token: ownActorToken,
      actor_token_type: accessTokenType,
      scope: 'api2',
    });
    t.equal(tokens.issued_token_type, accessTokenType);
    const payload = await verify(tokens.access_token, 'urn:api2');
    t.equal(payload.sub, '818727');
    t.same(payload.act, { sub: 'exchanger', client_id: 'exchanger' });
  });

  t.test("takes as actor only the caller's own token or one naming it; another party's is invalid_grant", async (t) => {
    const withActor = (actor: string) =>
      post(gw, { subject_token: subjectToken, subject_token_type: accessTokenType, actor_token: actor, actor_token_type: accessTokenType });
    const stranger = await withActor(actorToken);
    t.equal(stranger.status, 400, "another client's token, which the caller merely holds");
    t.same(stranger.body, { error: 'invalid_grant' });
    const foreign = await withActor(await signed({ sub: 'partner-svc', client_id: 'partner' }));
    t.same([foreign.status, foreign.body], [400, { error: 'invalid_grant' }], 'a token for an API the caller is, issued to someone else');
    const mayActOther = await withActor(await signed({ sub: 'partner-svc', client_id: 'partner', may_act: { client_id: 'api1' } }));
    t.same([mayActOther.status, mayActOther.body], [400, { error: 'invalid_grant' }], 'may_act naming another client');

    const byAud = await withActor(await signed({ sub: 'partner-svc', client_id: 'partner', aud: ['urn:api1', 'exchanger'] }));
    t.equal(byAud.status, 200, 'aud naming the caller');
    t.same((await verify(byAud.body.access_token as string)).act, { sub: 'partner-svc', client_id: 'partner' });
    const byMayAct = await withActor(await signed({ sub: 'partner-svc', client_id: 'partner', may_act: { client_id: 'exchanger' } }));
    t.equal(byMayAct.status, 200, 'may_act naming the caller');
  });

  t.test('nests the act of a delegated subject token under the new actor (RFC 8693 §4.1)', async (t) => {
    const r = await post(gw, {
      subject_token: delegatedToken,
      subject_token_type: accessTokenType,
      actor_token: ownActorToken,
      actor_token_type: jwtTokenType,
    });
    t.equal(r.status, 200);
    const payload = await verify(r.body.access_token as string);
    t.same(payload.act, { sub: 'exchanger', client_id: 'exchanger', act: { client_id: 'api1' } });
  });

  t.test('keeps the act of a delegated subject token when impersonating, so no actor is hidden', async (t) => {
    const r = await post(gw, { subject_token: delegatedToken, subject_token_type: accessTokenType });
    t.equal(r.status, 200);
    t.same((await verify(r.body.access_token as string)).act, { client_id: 'api1' });
  });

  t.test('narrows by scope', async (t) => {
    const tokens = await oidc.genericGrantRequest(exchanger!, tokenExchange, {
      subject_token: subjectToken,
      subject_token_type: accessTokenType,
      scope: 'api1',
    });
    t.equal(tokens.scope, 'api1');
    const payload = await verify(tokens.access_token, 'urn:api1');
    t.equal(payload.aud, 'urn:api1');
    t.equal(payload.scope, 'api1');
  });

  t.test('narrows by audience to the scopes of that API resource', async (t) => {
    const tokens = await oidc.genericGrantRequest(exchanger!, tokenExchange, {
      subject_token: subjectToken,
      subject_token_type: accessTokenType,
      audience: 'urn:api2',
    });
    t.equal(tokens.scope, 'api2');
    const payload = await verify(tokens.access_token, 'urn:api2');
    t.equal(payload.aud, 'urn:api2');
  });

  t.test('narrows by resource to the scopes of that API resource', async (t) => {
    const r = await post(gw, { subject_token: subjectToken, subject_token_type: accessTokenType, resource: 'urn:api1' });
    t.equal(r.status, 200);
    t.equal(r.body.scope, 'api1');
    t.equal((await verify(r.body.access_token as string, 'urn:api1')).aud, 'urn:api1');
  });

  t.test('serves a resource and an audience together', async (t) => {
    const r = await post(gw, {
      subject_token: subjectToken,
      subject_token_type: accessTokenType,
      resource: 'urn:api1',
      audience: 'urn:api2',
    });
    t.equal(r.status, 200);
    t.equal(r.body.scope, 'api1 api2');
  });

  t.test('serves two resources sent as a repeated parameter (RFC 8693 §2.1)', async (t) => {
    const body = new URLSearchParams([
      ['grant_type', tokenExchange],
      ['subject_token', subjectToken],
      ['subject_token_type', accessTokenType],
      ['resource', 'urn:api1'],
      ['resource', 'urn:api2'],
    ]);
    const res = await fetch(gw.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': form, authorization: basicAuthorization('exchanger') },
      body: body.toString(),
    });
    const answer = (await res.json()) as Record<string, unknown>;
    t.equal(res.status, 200, JSON.stringify(answer));
    t.equal(answer.scope, 'api1 api2');
  });

  const invalidTarget = 'The client cannot obtain a token for the requested resource or audience with the requested scope.';

  t.test('refuses a resource that is not configured as invalid_target', async (t) => {
    assertError(
      t,
      await post(gw, { subject_token: subjectToken, subject_token_type: accessTokenType, resource: 'https://unknown.example/api' }),
      'invalid_target',
      invalidTarget,
    );
  });

  t.test("refuses an audience outside the client's allowed scopes as invalid_target", async (t) => {
    assertError(
      t,
      await post(gw, { subject_token: subjectToken, subject_token_type: accessTokenType, audience: 'urn:api3' }),
      'invalid_target',
      invalidTarget,
    );
    assertError(
      t,
      await post(gw, { subject_token: subjectToken, subject_token_type: accessTokenType, resource: 'urn:api1', audience: 'urn:api3' }),
      'invalid_target',
      invalidTarget,
    );
  });

  t.test('refuses a resource the requested scope does not reach as invalid_target', async (t) => {
    assertError(
      t,
      await post(gw, { subject_token: subjectToken, subject_token_type: accessTokenType, scope: 'api1', resource: 'urn:api2' }),
      'invalid_target',
      invalidTarget,
    );
  });

  t.test('surfaces invalid_target to openid-client as an OAuth error', async (t) => {
    const refused: unknown = await oidc
      .genericGrantRequest(exchanger!, tokenExchange, {
        subject_token: subjectToken,
        subject_token_type: accessTokenType,
        audience: 'urn:api3',
      })
      .then(
        () => 'resolved',
        (e: unknown) => e,
      );
    t.match(refused, { code: 'OAUTH_RESPONSE_BODY_ERROR', error: 'invalid_target', status: 400, error_description: invalidTarget });
  });

  t.test('refuses a scope the client is not allowed as invalid_scope, before looking at the tokens', async (t) => {
    assertError(
      t,
      await post(gw, { subject_token: subjectToken, subject_token_type: accessTokenType, scope: 'api3' }),
      'invalid_scope',
      'The client is not allowed a requested scope.',
    );
  });

  t.test('refuses a client that is not allowed token exchange as unauthorized_client', async (t) => {
    assertError(
      t,
      await post(gw, { subject_token: subjectToken, subject_token_type: accessTokenType }, 'frontend'),
      'unauthorized_client',
      'The client is not allowed to use this grant type.',
    );
  });

  t.test('refuses a missing subject_token or subject_token_type as invalid_request', async (t) => {
    assertError(t, await post(gw, { subject_token_type: accessTokenType }), 'invalid_request', 'The subject_token parameter is missing.');
    assertError(
      t,
      await post(gw, { subject_token: '', subject_token_type: accessTokenType }),
      'invalid_request',
      'The subject_token parameter is missing.',
    );
    assertError(t, await post(gw, { subject_token: subjectToken }), 'invalid_request', 'The subject_token_type parameter is missing.');
  });

  t.test('refuses a subject_token_type other than an access token as invalid_request', async (t) => {
    for (const type of [
      'urn:ietf:params:oauth:token-type:id_token',
      'urn:ietf:params:oauth:token-type:refresh_token',
      'urn:ietf:params:oauth:token-type:saml2',
      'access_token',
    ]) {
      assertError(
        t,
        await post(gw, { subject_token: subjectToken, subject_token_type: type }),
        'invalid_request',
        'The subject_token_type is not supported.',
      );
    }
  });

  t.test('refuses an actor_token without actor_token_type, and the reverse, as invalid_request', async (t) => {
    assertError(
      t,
      await post(gw, { subject_token: subjectToken, subject_token_type: accessTokenType, actor_token: actorToken }),
      'invalid_request',
      'The actor_token_type parameter is required with actor_token.',
    );
    assertError(
      t,
      await post(gw, { subject_token: subjectToken, subject_token_type: accessTokenType, actor_token_type: accessTokenType }),
      'invalid_request',
      'The actor_token_type parameter is only allowed with actor_token.',
    );
  });

  t.test('refuses an unsupported actor_token_type or requested_token_type as invalid_request', async (t) => {
    assertError(
      t,
      await post(gw, {
        subject_token: subjectToken,
        subject_token_type: accessTokenType,
        actor_token: actorToken,
        actor_token_type: 'urn:ietf:params:oauth:token-type:id_token',
      }),
      'invalid_request',
      'The actor_token_type is not supported.',
    );
    assertError(
      t,
      await post(gw, {
        subject_token: subjectToken,
        subject_token_type: accessTokenType,
        requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token',
      }),
      'invalid_request',
      'The requested_token_type is not supported.',
    );
  });

  t.test('refuses an invalid subject token as invalid_request (RFC 8693 §2.2.2)', async (t) => {
    assertError(
      t,
      await post(gw, { subject_token: 'not-a-jwt', subject_token_type: accessTokenType }),
      'invalid_request',
      'The subject token is invalid.',
    );
    // An ID-token-shaped JWT is not an access token, whatever type the client claims for it.
    const [header, payload] = subjectToken.split('.') as [string, string];
    const retyped = `${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(header, 'base64url').toString()), typ: 'JWT' })).toString('base64url')}.${payload}.${subjectToken.split('.')[2]}`;
    assertError(
      t,
      await post(gw, { subject_token: retyped, subject_token_type: jwtTokenType }),
      'invalid_request',
      'The subject token is invalid.',
    );
  });

  t.test('refuses an invalid actor token as invalid_request (RFC 8693 §2.2.2)', async (t) => {
    assertError(
      t,
      await post(gw, {
        subject_token: subjectToken,
        subject_token_type: accessTokenType,
        actor_token: `${actorToken}x`,
        actor_token_type: accessTokenType,
      }),
      'invalid_request',
      'The actor token is invalid.',
    );
  });
});
