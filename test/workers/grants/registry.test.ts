import t from 'tap';
import { GrantRegistry } from '../../../workers/grants/registry.js';
import type { GrantHandler } from '../../../workers/grants/grant_handler.js';
import { builtInGrantTypes } from '../../../core/grant_types.js';

const grant = (grantType: string): GrantHandler => ({
  grantType,
  handle: () => ({ access_token: grantType, token_type: 'Bearer', expires_in: 1, scope: '' }),
});

t.test('holds a handler for every built-in grant type, the per-thread password grant included', async (t) => {
  const password = grant('password');
  const registry = new GrantRegistry({ password });
  for (const grantType of builtInGrantTypes) t.equal(registry.get(grantType)?.grantType, grantType, grantType);
  t.equal(registry.get('password'), password);
  t.equal(registry.get('delegation'), undefined);
});

t.test('refuses a password handler that names another grant type', async (t) => {
  t.throws(() => new GrantRegistry({ password: grant('pwd') }), /the password handler says it is "pwd"/);
});

t.test('refuses an extension grant that reuses a built-in name', async (t) => {
  const registry = new GrantRegistry({ password: grant('password') });
  t.throws(() => registry.register(grant('refresh_token')), /grant type "refresh_token" is already registered/);
  registry.register(grant('delegation'));
  t.equal(registry.get('delegation')?.grantType, 'delegation');
});
