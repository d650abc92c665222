import t from 'tap';
import { oauthErrorOf } from '../../helpers/oauth_error_of.js';
import { clientSchema } from '../../../gateway/config/schema.js';
import type { ClientConfig } from '../../../core/worker_config.js';
import { clientOnlyPolicy, ScopeRules, userPolicy } from '../../../core/rules/scope_rules.js';
import { registerClient } from '../../../core/client_model.js';

const rules = new ScopeRules({
  identityResources: [
    { name: 'openid', claims: ['sub'] },
    { name: 'profile', claims: [] },
  ],
  apiScopes: [{ name: 'api1' }, { name: 'api2' }, { name: 'api3' }],
  apiResources: [
    { name: 'urn:one', scopes: ['api1'] },
    { name: 'urn:both', scopes: ['api1', 'api2'] },
  ],
});
const make = (c: Partial<ClientConfig>) =>
  registerClient(clientSchema.parse({ clientId: 'c', allowedGrantTypes: ['client_credentials'], ...c }));
const m2m = make({ allowedScopes: ['api2', 'api1', 'api3', 'openid'] });
const user = make({ allowedScopes: ['openid', 'profile', 'api1', 'offline_access'], allowOfflineAccess: true });

t.test('grants all allowed API scopes to a client-only grant when scope is omitted', async (t) => {
  const g = rules.resolve(m2m, undefined, clientOnlyPolicy);
  t.same(g.scopes, ['api2', 'api1', 'api3']);
  t.equal(g.scope, 'api2 api1 api3');
  t.same(g.audiences, ['urn:both', 'urn:one']);
});

t.test('keeps the client order and drops repeated scopes', async (t) => {
  t.same(rules.resolve(m2m, 'api1  api2 api1', clientOnlyPolicy).scopes, ['api2', 'api1']);
});

t.test('maps API scopes to their resources for aud', async (t) => {
  t.same(rules.resolve(m2m, 'api2', clientOnlyPolicy).audiences, ['urn:both']);
  t.same(rules.resolve(m2m, 'api3', clientOnlyPolicy).audiences, []);
});

t.test('refuses an unregistered scope', async (t) => {
  t.equal(
    oauthErrorOf(() => rules.resolve(m2m, 'api1 nope', clientOnlyPolicy)),
    'invalid_scope: A requested scope is not registered.',
  );
});

t.test('refuses a registered scope the client is not allowed', async (t) => {
  t.equal(
    oauthErrorOf(() => rules.resolve(user, 'api2', userPolicy)),
    'invalid_scope: The client is not allowed a requested scope.',
  );
});

t.test('refuses identity scopes and offline_access for a client-only grant', async (t) => {
  t.equal(
    oauthErrorOf(() => rules.resolve(m2m, 'openid', clientOnlyPolicy)),
    'invalid_scope: A requested scope is not allowed for this grant type.',
  );
  t.equal(
    oauthErrorOf(() => rules.resolve(user, 'offline_access', clientOnlyPolicy)),
    'invalid_scope: A requested scope is not allowed for this grant type.',
  );
});

t.test('grants identity scopes and offline access to a user grant', async (t) => {
  const g = rules.resolve(user, undefined, userPolicy);
  t.same(g.scopes, ['openid', 'profile', 'api1', 'offline_access']);
  t.same(g.identityScopes, ['openid', 'profile']);
  t.equal(g.offlineAccess, true);
});

t.test('refuses a client-only grant when no allowed scope fits it', async (t) => {
  const idOnly = make({ allowedScopes: ['openid'] });
  t.equal(
    oauthErrorOf(() => rules.resolve(idOnly, undefined, clientOnlyPolicy)),
    'invalid_scope: The client has no scope allowed for this grant type.',
  );
});

t.test('lists every registered scope for discovery', async (t) => {
  t.same(rules.supportedScopes(), ['openid', 'profile', 'api1', 'api2', 'api3', 'offline_access']);
});

t.test('resolves a repeated scope string once and keeps refusing an invalid one', async (t) => {
  const first = rules.resolve(m2m, 'api1 api2', clientOnlyPolicy);
  t.equal(rules.resolve(m2m, 'api1 api2', clientOnlyPolicy), first, 'the same frozen result');
  t.equal(rules.resolve(m2m, 'api1 api2', userPolicy).scope, 'api2 api1', 'per policy');
  for (let i = 0; i < 2; i++)
    t.equal(
      oauthErrorOf(() => rules.resolve(m2m, 'nope', clientOnlyPolicy)),
      'invalid_scope: A requested scope is not registered.',
    );
  t.equal(
    oauthErrorOf(() => rules.resolve(m2m, 'openid', clientOnlyPolicy)),
    'invalid_scope: A requested scope is not allowed for this grant type.',
  );
});

t.test('narrows to a resource: aud is that resource, API scopes only those reaching it', async (t) => {
  const g = rules.resolve(m2m, 'api1 api2', clientOnlyPolicy);
  const one = rules.forResources(g, ['urn:one'], true);
  t.same(one.audiences, ['urn:one'], 'api1 also reaches urn:both, which was not asked for');
  t.same(one.scopes, ['api1']);
  t.equal(rules.forResources(g, ['urn:one'], true), one, 'cached per granted scopes and targets');
  const both = rules.forResources(g, ['urn:both'], true);
  t.same(both.scopes, ['api2', 'api1']);
  t.same(both.audiences, ['urn:both']);
});

t.test('keeps identity scopes and offline_access when narrowing a user grant', async (t) => {
  const narrowed = rules.forResources(rules.resolve(user, undefined, userPolicy), ['urn:one'], true);
  t.same(narrowed.scopes, ['openid', 'profile', 'api1', 'offline_access']);
  t.equal(narrowed.offlineAccess, true);
});

t.test('refuses an unknown or unreached resource only when the request named it', async (t) => {
  const g = rules.resolve(m2m, 'api2', clientOnlyPolicy);
  for (const target of ['urn:nope', 'urn:one', 'urn:both urn:nope'])
    t.equal(
      oauthErrorOf(() => rules.forResources(g, target.split(' '), true)),
      'invalid_target: The client cannot obtain a token for the requested resource with the requested scope.',
      target,
    );
  const lax = rules.forResources(rules.resolve(m2m, 'api2', clientOnlyPolicy), ['urn:one', 'urn:both'], false);
  t.same(lax.audiences, ['urn:both'], 'a bound resource the narrowed scope no longer reaches is left out');
  t.same(lax.scopes, ['api2']);
});
