// The extension-grant adapter (workers/grants/extension_grant.ts), through a real gateway with
// fixture validators: what a validator sees, what it may set, and what happens when it misbehaves.
import t, { type Test } from 'tap';
import { fileURLToPath } from 'node:url';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { sha256Secret, startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/validators/${name}.ts`, import.meta.url));
const timeoutMs = 300;
const form = 'application/x-www-form-urlencoded';
const unavailable = { error: 'temporarily_unavailable', error_description: 'The service is temporarily unavailable. Retry later.' };

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
  ms: number;
}

async function post(gw: TestGateway, params: Record<string, string>, clientId = 'ext'): Promise<Answer> {
  const started = performance.now();
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': form, authorization: basicAuthorization(clientId) },
    body: new URLSearchParams(params).toString(),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown>, ms: performance.now() - started };
}

/** A sign-in a minute ago, as the echo validator's `auth_time` parameter. */
const signedIn = (): string => String(Math.floor(Date.now() / 1000) - 60);

function assertNoStore(t: Test, headers: Headers): void {
  t.equal(headers.get('cache-control'), 'no-store');
  t.equal(headers.get('pragma'), 'no-cache');
}

t.test('extension grants', async (t) => {
  const gw = await startTestGateway(t, {
    validatorModules: ['echo', 'sets_nothing', 'throws', 'never_settles'].map(fixture),
    watchValidators: false,
    patch: (raw) => {
      raw.validatorTimeoutMs = timeoutMs;
      (raw.clients as unknown[]).push(
        {
          clientId: 'ext',
          clientSecrets: [{ value: sha256Secret('secret') }],
          allowedGrantTypes: ['test_echo', 'test_nothing', 'test_throws', 'test_never'],
          allowedScopes: ['openid', 'api1', 'api2'],
        },
        {
          clientId: 'ext-api1',
          clientSecrets: [{ value: sha256Secret('secret') }],
          allowedGrantTypes: ['test_echo'],
          allowedScopes: ['api1'],
        },
      );
    },
  });
  const jwks = createRemoteJWKSet(new URL(`${gw.url}/.well-known/openid-configuration/jwks`));
  const verify = (token: unknown, audience: string) =>
    jwtVerify(token as string, jwks, { issuer: gw.config.issuer, audience, typ: 'at+jwt' }).then((r) => r.payload);

  t.test('refuses a client that does not list the grant type as unauthorized_client', async (t) => {
    const r = await post(gw, { grant_type: 'test_echo', sub: 'alice' }, 'm2m');
    t.equal(r.status, 400);
    assertNoStore(t, r.headers);
    t.same(r.body, { error: 'unauthorized_client', error_description: 'The client is not allowed to use this grant type.' });
  });

  t.test('refuses an unknown scope and a scope the client is not allowed as invalid_scope', async (t) => {
    const unknown = await post(gw, { grant_type: 'test_echo', sub: 'alice', scope: 'api1 api9' });
    t.equal(unknown.status, 400);
    assertNoStore(t, unknown.headers);
    t.same(unknown.body, { error: 'invalid_scope', error_description: 'A requested scope is not registered.' });
    const notAllowed = await post(gw, { grant_type: 'test_echo', sub: 'alice', scope: 'api2' }, 'ext-api1');
    t.equal(notAllowed.status, 400);
    t.same(notAllowed.body, { error: 'invalid_scope', error_description: 'The client is not allowed a requested scope.' });
  });

  t.test('shows the validator custom parameters, and null for absent or empty ones', async (t) => {
    const r = await post(gw, {
      grant_type: 'test_echo',
      sub: 'alice',
      custom: 'a b&c=d',
      empty: '',
      scope: 'api2 openid',
      auth_time: signedIn(),
    });
    t.equal(r.status, 200);
    t.same(r.body.seen, {
      custom: 'a b&c=d',
      empty: null,
      absent: null,
      names: ['grant_type', 'sub', 'custom', 'scope', 'auth_time'],
      client_id: 'ext',
      grant_type: 'test_echo',
      requested_scopes: ['api2', 'openid'],
      issuer: gw.config.issuer,
      api_resources: [
        { name: 'urn:api1', scopes: ['api1'] },
        { name: 'urn:api2', scopes: ['api2'] },
      ],
    });
  });

  t.test('grants every allowed scope when scope is omitted', async (t) => {
    const r = await post(gw, { grant_type: 'test_echo', sub: 'alice', auth_time: signedIn() });
    t.equal(r.status, 200);
    t.equal(r.body.scope, 'openid api1 api2');
    t.same((r.body.seen as { requested_scopes: string[] }).requested_scopes, ['openid', 'api1', 'api2']);
  });

  t.test('fails closed with invalid_grant when the validator sets no result', async (t) => {
    const r = await post(gw, { grant_type: 'test_nothing' });
    t.equal(r.status, 400);
    assertNoStore(t, r.headers);
    t.same(r.body, { error: 'invalid_grant' });
  });

  t.test('answers invalid_grant without the message when the validator throws, and the worker serves on', async (t) => {
    const r = await post(gw, { grant_type: 'test_throws' });
    t.equal(r.status, 400);
    assertNoStore(t, r.headers);
    t.same(r.body, { error: 'invalid_grant' });
    t.notMatch(JSON.stringify(r.body), /hunter2/);
    const next = await post(gw, { grant_type: 'test_echo', sub: 'alice' });
    t.equal(next.status, 200, 'the next request on the same (only) worker succeeds');
  });

  t.test('answers 503 with Retry-After when the validator does not settle in time, and the worker serves on', async (t) => {
    const [hung, meanwhile] = await Promise.all([
      post(gw, { grant_type: 'test_never' }),
      // Sent while the hung validator holds the worker's only thread.
      new Promise<Answer>((resolve) => setTimeout(() => resolve(post(gw, { grant_type: 'test_echo', sub: 'alice' })), 50)),
    ]);
    t.equal(hung.status, 503);
    assertNoStore(t, hung.headers);
    t.equal(hung.headers.get('retry-after'), '1');
    t.same(hung.body, unavailable);
    t.ok(hung.ms >= timeoutMs - 20 && hung.ms < timeoutMs + 700, `answered after ${Math.round(hung.ms)} ms`);
    t.equal(meanwhile.status, 200, 'another request is served while the validator hangs');
    t.ok(meanwhile.ms < timeoutMs, `in ${Math.round(meanwhile.ms)} ms`);
    t.equal((await post(gw, { grant_type: 'test_echo', sub: 'alice' })).status, 200, 'and after it timed out');
  });

  t.test('issues a client-only token when the validator gives no subject', async (t) => {
    const r = await post(gw, { grant_type: 'test_echo' });
    t.equal(r.status, 200);
    t.equal(r.body.scope, 'api1 api2', 'no identity scopes by default');
    const payload = await verify(r.body.access_token, 'urn:api1');
    t.equal(payload.sub, 'ext', 'sub is the client id (RFC 9068 §2.2)');
    t.equal(payload.client_id, 'ext');
    t.notOk('auth_time' in payload || 'amr' in payload || 'idp' in payload, 'no user claims');
  });

  t.test('invents no sign-in for a subject the validator gave without one: client-only rules apply', async (t) => {
    const r = await post(gw, { grant_type: 'test_echo', sub: 'alice' });
    t.equal(r.status, 200, JSON.stringify(r.body));
    t.equal(r.body.scope, 'api1 api2', 'no identity scopes by default');
    const payload = await verify(r.body.access_token, 'urn:api1');
    t.equal(payload.sub, 'alice');
    t.notOk('auth_time' in payload || 'amr' in payload || 'idp' in payload, 'no auth_time, amr or idp made up');
    const openid = await post(gw, { grant_type: 'test_echo', sub: 'alice', scope: 'openid api1' });
    t.equal(openid.status, 400);
    t.same(openid.body, { error: 'invalid_scope', error_description: 'A requested scope is not allowed for this grant type.' });
  });

  t.test('refuses identity scopes for a client-only token as invalid_scope', async (t) => {
    const r = await post(gw, { grant_type: 'test_echo', scope: 'openid api1' });
    t.equal(r.status, 400);
    t.same(r.body, { error: 'invalid_scope', error_description: 'A requested scope is not allowed for this grant type.' });
  });

  t.test(
    'puts extra claims in the token, and refuses as invalid_grant any that would override sub, iss, scope or the other registered claims',
    async (t) => {
      const claims = { department: 'sales', roles: ['reader', 'writer'], act: { client_id: 'gateway' } };
      const authTime = signedIn();
      const r = await post(gw, {
        grant_type: 'test_echo',
        sub: 'alice',
        scope: 'api2',
        claims: JSON.stringify(claims),
        auth_time: authTime,
      });
      t.equal(r.status, 200);
      const payload = await verify(r.body.access_token, 'urn:api2');
      t.equal(payload.sub, 'alice');
      t.equal(payload.iss, gw.config.issuer);
      t.equal(payload.scope, 'api2');
      t.equal(payload.aud, 'urn:api2');
      t.equal(payload.client_id, 'ext');
      t.equal((payload.exp as number) - (payload.iat as number), 3600);
      t.equal(payload.department, 'sales');
      t.same(payload.roles, ['reader', 'writer']);
      t.same(payload.act, { client_id: 'gateway' }, 'act may be set (RFC 8693 §4.1)');
      t.same(payload.amr, ['test_echo']);
      t.equal(payload.idp, 'local');
      t.equal(payload.auth_time, Number(authTime));

      // A validator that tries is buggy: fail closed rather than issue a token it did not mean
      // (test/workers/grants/validator_fail_closed.test.ts covers every case and the log).
      for (const [claim, value] of Object.entries({
        sub: 'mallory',
        iss: 'https://evil.example',
        scope: 'admin',
        aud: 'urn:evil',
        client_id: 'other',
        exp: 9999999999,
      })) {
        const refused = await post(gw, {
          grant_type: 'test_echo',
          sub: 'alice',
          scope: 'api2',
          claims: JSON.stringify({ ...claims, [claim]: value }),
        });
        t.equal(refused.status, 400, `${claim}: refused`);
        t.same(refused.body, { error: 'invalid_grant' });
      }
    },
  );

  t.test(
    'lets a validator set amr from the RFC 8176 registry and acr, for step-up, with a sign-in; refuses anything else there',
    async (t) => {
      const stepUp = { amr: ['pwd', 'otp', 'mfa'], acr: 'urn:example:loa:2' };
      const signedIn = String(Math.floor(Date.now() / 1000) - 5);
      const r = await post(gw, {
        grant_type: 'test_echo',
        sub: 'alice',
        auth_time: signedIn,
        scope: 'api2',
        claims: JSON.stringify(stepUp),
      });
      t.equal(r.status, 200, JSON.stringify(r.body));
      const payload = await verify(r.body.access_token, 'urn:api2');
      t.same(payload.amr, ['pwd', 'otp', 'mfa'], 'the validator amr replaces the grant type');
      t.equal(payload.acr, 'urn:example:loa:2');
      const single = await post(gw, {
        grant_type: 'test_echo',
        sub: 'alice',
        auth_time: signedIn,
        scope: 'api2',
        claims: JSON.stringify({ amr: 'hwk' }),
      });
      t.same((await verify(single.body.access_token, 'urn:api2')).amr, ['hwk'], 'one method as a string');

      for (const [name, claims, sub, authTime] of [
        ['an amr value outside the registry', { amr: ['pwd', 'magic'] }, 'alice', signedIn],
        ['an empty amr', { amr: [] }, 'alice', signedIn],
        ['an acr that is not a string', { acr: 2 }, 'alice', signedIn],
        ['an empty acr', { acr: '' }, 'alice', signedIn],
        ['amr for a client-only token', { amr: ['otp'] }, undefined, undefined],
        ['amr for a subject without a stated sign-in', { amr: ['otp'] }, 'alice', undefined],
        ['acr for a subject without a stated sign-in', { acr: 'urn:example:loa:2' }, 'alice', undefined],
      ] as const) {
        const refused = await post(gw, {
          grant_type: 'test_echo',
          ...(sub === undefined ? {} : { sub }),
          ...(authTime === undefined ? {} : { auth_time: authTime }),
          scope: 'api2',
          claims: JSON.stringify(claims),
        });
        t.equal(refused.status, 400, `${name}: refused`);
        t.same(refused.body, { error: 'invalid_grant' }, name);
      }
    },
  );

  t.test('puts customResponse members at the top level but never over the standard members', async (t) => {
    const response = {
      access_token: 'forged',
      token_type: 'MAC',
      expires_in: 1,
      scope: 'admin',
      refresh_token: 'forged-rt',
      id_token: 'forged-id',
      issued_token_type: 'urn:ietf:params:oauth:token-type:id_token',
      tenant_hint: 'acme',
      nested: { a: [1, 2] },
    };
    const r = await post(gw, { grant_type: 'test_echo', sub: 'alice', scope: 'api1', response: JSON.stringify(response) });
    t.equal(r.status, 200);
    assertNoStore(t, r.headers);
    t.same(Object.keys(r.body).sort(), ['access_token', 'expires_in', 'nested', 'scope', 'seen', 'tenant_hint', 'token_type']);
    t.equal(r.body.token_type, 'Bearer');
    t.equal(r.body.expires_in, 3600);
    t.equal(r.body.scope, 'api1');
    t.equal(decodeJwt(r.body.access_token as string).sub, 'alice');
    t.equal(r.body.tenant_hint, 'acme');
    t.same(r.body.nested, { a: [1, 2] });
  });

  t.test('keeps an issued_token_type that states what was issued (RFC 8693 §2.2.1)', async (t) => {
    const r = await post(gw, {
      grant_type: 'test_echo',
      sub: 'alice',
      response: JSON.stringify({ issued_token_type: 'urn:ietf:params:oauth:token-type:access_token' }),
    });
    t.equal(r.status, 200);
    t.equal(r.body.issued_token_type, 'urn:ietf:params:oauth:token-type:access_token');
  });

  t.test('narrows the token to the scopes the validator names, with aud following', async (t) => {
    const r = await post(gw, { grant_type: 'test_echo', sub: 'alice', narrow: 'api2' });
    t.equal(r.status, 200);
    t.equal(r.body.scope, 'api2');
    const payload = await verify(r.body.access_token, 'urn:api2');
    t.equal(payload.aud, 'urn:api2');
  });

  t.test('fails closed with invalid_grant when the validator widens the scopes', async (t) => {
    const r = await post(gw, { grant_type: 'test_echo', sub: 'alice', scope: 'api1', narrow: 'api1 api2' });
    t.equal(r.status, 400);
    t.same(r.body, { error: 'invalid_grant' });
  });

  t.test('answers GrantValidationResult.error with that code, that description and the custom response', async (t) => {
    const r = await post(gw, {
      grant_type: 'test_echo',
      error: 'invalid_target',
      error_description: 'The resource is not served here.',
      response: JSON.stringify({ hint: 'use urn:api2', error: 'forged', error_description: 'forged' }),
    });
    t.equal(r.status, 400);
    assertNoStore(t, r.headers);
    t.same(r.body, { hint: 'use urn:api2', error: 'invalid_target', error_description: 'The resource is not served here.' });
  });

  t.test('answers an error without a description with none, even if the custom response has one', async (t) => {
    const r = await post(gw, {
      grant_type: 'test_echo',
      error: 'invalid_request',
      response: JSON.stringify({ error_description: 'forged' }),
    });
    t.equal(r.status, 400);
    t.same(r.body, { error: 'invalid_request' });
  });

  t.test('answers an error code that is not an OAuth token error as invalid_grant', async (t) => {
    const r = await post(gw, { grant_type: 'test_echo', error: 'made_up', error_description: 'Described.' });
    t.equal(r.status, 400);
    t.same(r.body, { error: 'invalid_grant', error_description: 'Described.' });
  });
});
