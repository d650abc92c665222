import t from 'tap';
import { createHash } from 'node:crypto';
import { clientSchema } from '../../../gateway/config/schema.js';
import type { ClientConfig } from '../../../core/worker_config.js';
import { ClientAuthenticator } from '../../../gateway/client_authentication/authenticator.js';
import { registerClients } from '../../../core/client_model.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';

const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest('base64');
const client = (c: Partial<ClientConfig> & { clientId: string }): ClientConfig =>
  clientSchema.parse({ allowedGrantTypes: ['client_credentials'], ...c });
const params = (p: Record<string, string>) => Object.assign(Object.create(null) as Record<string, string>, p);

const now = Date.parse('2026-06-01T00:00:00Z');
const auth = new ClientAuthenticator(
  registerClients([
    client({ clientId: 'm2m', clientSecrets: [{ value: sha('secret') }] }),
    client({
      clientId: 'rolling',
      clientSecrets: [{ value: sha('old'), expiration: '2026-01-01T00:00:00Z' }, { value: sha('new') }],
    }),
    client({ clientId: 'off', enabled: false, clientSecrets: [{ value: sha('secret') }] }),
    client({ clientId: 'public', requireClientSecret: false }),
    client({ clientId: 'an:identifier', clientSecrets: [{ value: sha('some secure & non-standard secret') }] }),
  ]),
  () => now,
);

t.test('accepts the right secret with Basic', async (t) => {
  const r = auth.authenticate(basicAuthorization('m2m', 'secret'), params({}));
  t.equal(r.ok && r.client.clientId, 'm2m');
  t.equal(r.ok && r.method, 'client_secret_basic');
});

t.test('accepts the right secret in the body', async (t) => {
  const r = auth.authenticate('', params({ client_id: 'm2m', client_secret: 'secret' }));
  t.equal(r.ok && r.method, 'client_secret_post');
});

t.test('accepts Basic with a matching client_id in the body', async (t) => {
  t.equal(auth.authenticate(basicAuthorization('m2m', 'secret'), params({ client_id: 'm2m' })).ok, true);
});

t.test('accepts the RFC 6749 Appendix B client through Basic', async (t) => {
  const r = auth.authenticate(basicAuthorization('an:identifier', 'some secure & non-standard secret'), params({}));
  t.equal(r.ok && r.client.clientId, 'an:identifier');
});

t.test('rejects a wrong secret, an unknown client and a disabled client the same way', async (t) => {
  for (const [header, body] of [
    [basicAuthorization('m2m', 'wrong'), {}],
    [basicAuthorization('nobody', 'secret'), {}],
    [basicAuthorization('off', 'secret'), {}],
    ['', { client_id: 'm2m', client_secret: 'secretx' }],
    ['', { client_id: 'nobody', client_secret: 'secret' }],
  ] as const) {
    const r = auth.authenticate(header, params(body));
    t.equal(r.ok, false);
    t.equal(!r.ok && r.failure, 'invalid_client');
    t.equal(!r.ok && r.usedAuthorizationHeader, header.length > 0);
  }
});

t.test('refuses an expired secret and accepts its successor', async (t) => {
  t.equal(auth.authenticate(basicAuthorization('rolling', 'old'), params({})).ok, false);
  t.equal(auth.authenticate(basicAuthorization('rolling', 'new'), params({})).ok, true);
});

t.test('refuses two authentication methods at once', async (t) => {
  const r = auth.authenticate(basicAuthorization('m2m', 'secret'), params({ client_secret: 'secret' }));
  t.equal(!r.ok && r.failure, 'multiple_methods');
  const r2 = auth.authenticate(basicAuthorization('m2m', 'secret'), params({ client_id: 'other' }));
  t.equal(!r2.ok && r2.failure, 'multiple_methods');
});

t.test('authenticates a public client by client_id alone', async (t) => {
  const r = auth.authenticate('', params({ client_id: 'public' }));
  t.equal(r.ok && r.method, 'none');
});

t.test('refuses a confidential client without a secret', async (t) => {
  const r = auth.authenticate('', params({ client_id: 'm2m' }));
  t.equal(!r.ok && r.failure, 'invalid_client');
});

t.test('refuses a public client that presents a secret it does not have', async (t) => {
  t.equal(auth.authenticate('', params({ client_id: 'public', client_secret: 'x' })).ok, false);
});

t.test('refuses a request that names no client', async (t) => {
  const r = auth.authenticate('', params({ grant_type: 'client_credentials' }));
  t.same(r, { ok: false, failure: 'invalid_client', usedAuthorizationHeader: false, clientId: undefined });
});

t.test('tells a malformed Basic header from another scheme', async (t) => {
  for (const header of ['Basic %%%', 'Basic', `Basic ${Buffer.from('no-colon').toString('base64')}`]) {
    const r = auth.authenticate(header, params({}));
    t.equal(!r.ok && r.failure, 'malformed_basic', header);
    t.equal(!r.ok && r.usedAuthorizationHeader, true);
  }
  const other = auth.authenticate('Bearer token', params({}));
  t.equal(!other.ok && other.failure, 'invalid_client', 'another scheme: no client authenticated');
  t.equal(!other.ok && other.usedAuthorizationHeader, true);
});

t.test('a remembered Basic header stops working when its secret expires', async (t) => {
  let clock = Date.parse('2026-01-01T00:00:00Z');
  const expiring = new ClientAuthenticator(
    registerClients([client({ clientId: 'exp', clientSecrets: [{ value: sha('s'), expiration: '2026-01-01T00:00:30Z' }] })]),
    () => clock,
  );
  t.equal(expiring.authenticate(basicAuthorization('exp', 's'), params({})).ok, true);
  clock += 10_000;
  t.equal(expiring.authenticate(basicAuthorization('exp', 's'), params({})).ok, true, 'still valid, from memory');
  clock += 25_000;
  t.equal(
    expiring.authenticate(basicAuthorization('exp', 's'), params({})).ok,
    false,
    'past the expiry the header is checked again and refused',
  );
});

t.test('a remembered Basic header still refuses a second authentication method', async (t) => {
  t.equal(auth.authenticate(basicAuthorization('m2m', 'secret'), params({})).ok, true);
  const r = auth.authenticate(basicAuthorization('m2m', 'secret'), params({ client_secret: 'secret' }));
  t.equal(!r.ok && r.failure, 'multiple_methods');
  const r2 = auth.authenticate(basicAuthorization('m2m', 'secret'), params({ client_id: 'other' }));
  t.equal(!r2.ok && r2.failure, 'multiple_methods');
});

t.test('a failed Basic header is never remembered', async (t) => {
  for (let i = 0; i < 3; i++) t.equal(auth.authenticate(basicAuthorization('m2m', 'wrong'), params({})).ok, false);
});
