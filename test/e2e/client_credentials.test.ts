import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import * as oidc from 'openid-client';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { generateSigningKey } from '../../gateway/keys/key_loader.js';
import { signingAlgorithms } from '../../core/signing_key.js';
import { appendixB, startTestGateway } from '../helpers/test_gateway.js';
import { basicAuthorization } from '../helpers/basic_authorization.js';

// A resource server's view: discovery, then the published JWKS, then RFC 9068 checks.
async function verifyAsResourceServer(issuer: string, token: string, audience: string) {
  const discovered = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as { jwks_uri: string };
  const jwks = createRemoteJWKSet(new URL(discovered.jwks_uri));
  return jwtVerify(token, jwks, { issuer, audience, typ: 'at+jwt' });
}

// One gateway for every subtest on the base config: a start (worker threads booting their loaders)
// costs more than all of these subtests' requests. Two threads, so that the jti test sees tokens
// of both; the other subtests do not depend on the thread count. Subtests needing a config of
// their own (an issuer with a path, each signing algorithm) start their own.
const gw = await startTestGateway(t, { patch: (raw) => void (raw.workers = { threads: 2 }) });

t.test('openid-client gets a token with Basic auth that verifies against the JWKS', async (t) => {
  const config = await oidc.discovery(new URL(gw.config.issuer), 'm2m', undefined, oidc.ClientSecretBasic('secret'), {
    execute: [oidc.allowInsecureRequests],
  });
  const tokens = await oidc.clientCredentialsGrant(config, { scope: 'api1' });
  t.equal(tokens.token_type, 'bearer');
  t.equal(tokens.expires_in, 600);
  t.equal(tokens.scope, 'api1');

  const { payload, protectedHeader } = await verifyAsResourceServer(gw.config.issuer, tokens.access_token, 'urn:api1');
  t.equal(protectedHeader.typ, 'at+jwt');
  t.equal(protectedHeader.alg, 'ES256');
  t.type(protectedHeader.kid, 'string');
  t.equal(payload.iss, gw.config.issuer);
  t.equal(payload.aud, 'urn:api1');
  t.equal(payload.scope, 'api1');
  t.equal(payload.client_id, 'm2m');
  t.equal(payload.sub, 'm2m', 'a client-only token names the client as subject (RFC 9068 §2.2)');
  t.equal(payload.tier, 'gold', 'client claims are included');
  t.equal((payload.exp as number) - (payload.iat as number), 600);
  t.equal(payload.nbf, payload.iat);
  t.ok(Math.abs((payload.iat as number) - Date.now() / 1000) < 5);
  t.match(payload.jti, /^[0-9a-f-]{36}$/);
});

t.test('RFC 8414 metadata: openid-client with algorithm oauth2 discovers the server and gets a token', async (t) => {
  const res = await fetch(`${gw.url}/.well-known/oauth-authorization-server`);
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
  const metadata = (await res.json()) as Record<string, unknown>;
  t.equal(metadata.issuer, gw.config.issuer, 'RFC 8414 §3.3: the issuer is the one the metadata was fetched for');
  t.equal(metadata.token_endpoint, gw.tokenUrl);
  t.same(metadata, await (await fetch(`${gw.url}/.well-known/openid-configuration`)).json(), 'the same document as OpenID discovery');
  const config = await oidc.discovery(new URL(gw.config.issuer), 'm2m', undefined, oidc.ClientSecretBasic('secret'), {
    algorithm: 'oauth2',
    execute: [oidc.allowInsecureRequests],
  });
  const tokens = await oidc.clientCredentialsGrant(config, { scope: 'api1' });
  const { payload } = await verifyAsResourceServer(gw.config.issuer, tokens.access_token, 'urn:api1');
  t.equal(payload.client_id, 'm2m');
});

t.test('RFC 8414 §3.1: an issuer with a path has its metadata under the well-known name plus that path', async (t) => {
  const own = await startTestGateway(t, {
    patch: (raw) => {
      raw.issuer = `${String(raw.issuer)}/tenant-a`;
    },
  });
  const res = await fetch(`${own.url}/.well-known/oauth-authorization-server/tenant-a`);
  t.equal(res.status, 200);
  t.equal(((await res.json()) as { issuer: string }).issuer, `${own.url}/tenant-a`);
  t.equal((await fetch(`${own.url}/.well-known/oauth-authorization-server`)).status, 404, 'not at the root');
});

t.test('openid-client gets a token with client_secret_post', async (t) => {
  const config = await oidc.discovery(new URL(gw.config.issuer), 'm2m', undefined, oidc.ClientSecretPost('secret'), {
    execute: [oidc.allowInsecureRequests],
  });
  const tokens = await oidc.clientCredentialsGrant(config);
  t.equal(tokens.scope, 'api1 api2', 'an omitted scope grants every allowed API scope');
  const { payload } = await verifyAsResourceServer(gw.config.issuer, tokens.access_token, 'urn:api2');
  t.same(payload.aud, ['urn:api1', 'urn:api2']);
});

t.test('openid-client authenticates the Appendix B client with Basic', async (t) => {
  const config = await oidc.discovery(new URL(gw.config.issuer), appendixB.clientId, undefined, oidc.ClientSecretBasic(appendixB.secret), {
    execute: [oidc.allowInsecureRequests],
  });
  const tokens = await oidc.clientCredentialsGrant(config);
  t.equal(tokens.scope, 'api1');
});

t.test('openid-client surfaces invalid_client and invalid_scope as OAuth errors', async (t) => {
  const wrong = await oidc.discovery(new URL(gw.config.issuer), 'm2m', undefined, oidc.ClientSecretBasic('nope'), {
    execute: [oidc.allowInsecureRequests],
  });
  // RFC 6749 §5.2: with Basic, the 401 carries a challenge, which oauth4webapi reports as such.
  const unauthenticated: unknown = await oidc.clientCredentialsGrant(wrong).then(
    () => 'resolved',
    (e: unknown) => e,
  );
  t.match(unauthenticated, {
    code: 'OAUTH_WWW_AUTHENTICATE_CHALLENGE',
    status: 401,
    cause: [{ scheme: 'basic', parameters: { realm: gw.config.issuer } }],
  });
  const right = await oidc.discovery(new URL(gw.config.issuer), 'm2m', undefined, oidc.ClientSecretBasic('secret'), {
    execute: [oidc.allowInsecureRequests],
  });
  const refused: unknown = await oidc.clientCredentialsGrant(right, { scope: 'openid' }).then(
    () => 'resolved',
    (e: unknown) => e,
  );
  t.match(refused, { code: 'OAUTH_RESPONSE_BODY_ERROR', error: 'invalid_scope', status: 400 });
});

t.test('every token has a unique jti', async (t) => {
  const auth = basicAuthorization('m2m');
  const tokens = await Promise.all(
    Array.from({ length: 100 }, async () => {
      const res = await fetch(gw.tokenUrl, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=client_credentials',
      });
      return ((await res.json()) as { access_token: string }).access_token;
    }),
  );
  const jtis = new Set(
    tokens.map((tok) => (JSON.parse(Buffer.from(tok.split('.')[1] as string, 'base64url').toString()) as { jti: string }).jti),
  );
  t.equal(jtis.size, 100);
});

for (const alg of signingAlgorithms) {
  t.test(`signs with a configured ${alg} key that jose verifies`, async (t) => {
    const dir = t.testdir({});
    const signing = await generateSigningKey(alg);
    const retired = await generateSigningKey(alg);
    writeFileSync(path.join(dir, 'current.jwk.json'), JSON.stringify(signing.jwk));
    writeFileSync(path.join(dir, 'retired.jwk.json'), JSON.stringify(retired.jwk));
    const own = await startTestGateway(t, {
      patch: (raw) => {
        raw.signing = {
          algorithm: alg,
          keys: [{ file: path.join(dir, 'current.jwk.json') }, { file: path.join(dir, 'retired.jwk.json') }],
        };
      },
    });
    const res = await fetch(own.tokenUrl, {
      method: 'POST',
      headers: { authorization: basicAuthorization('m2m'), 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials&scope=api2',
    });
    const { access_token } = (await res.json()) as { access_token: string };
    t.equal(decodeProtectedHeader(access_token).kid, signing.kid, 'the first key signs');
    const { payload, protectedHeader } = await verifyAsResourceServer(own.config.issuer, access_token, 'urn:api2');
    t.equal(protectedHeader.alg, alg);
    t.equal(payload.scope, 'api2');
    const jwks = (await (await fetch(`${own.url}/.well-known/openid-configuration/jwks`)).json()) as {
      keys: { kid: string; d?: string }[];
    };
    t.same(
      jwks.keys.map((k) => k.kid),
      [signing.kid, retired.kid],
      'all keys are published',
    );
    t.notOk(
      jwks.keys.some((k) => 'd' in k || 'p' in k),
      'no private members',
    );
  });
}
