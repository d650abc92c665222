// The one scope-and-resource step of every grant (core/rules/scope_narrowing.ts): a request
// that makes a grant, and one that redeems or refreshes a grant made earlier.
import t from 'tap';
import { oauthErrorOf } from '../../helpers/oauth_error_of.js';
import { clientSchema } from '../../../gateway/config/schema.js';
import { registerClient } from '../../../core/client_model.js';
import { narrowRequestedGrant, narrowStoredGrant } from '../../../core/rules/scope_narrowing.js';
import { clientOnlyPolicy, ScopeRules } from '../../../core/rules/scope_rules.js';
import type { FormParams } from '../../../wire/token_task.js';

const rules = new ScopeRules({
  identityResources: [{ name: 'openid', claims: ['sub'] }],
  apiScopes: [{ name: 'a' }, { name: 'b' }],
  apiResources: [
    { name: 'urn:a', scopes: ['a'] },
    { name: 'urn:b', scopes: ['b'] },
  ],
});
const client = registerClient(
  clientSchema.parse({ clientId: 'c', allowedGrantTypes: ['authorization_code'], allowedScopes: ['openid', 'a', 'b'] }),
);
const form = (members: Record<string, string>): FormParams => Object.assign(Object.create(null) as FormParams, members);
const stored = { scopes: ['openid', 'a', 'b'] };

t.test('a request that makes a grant gets its scope narrowed to the resources it names, and keeps them', async (t) => {
  const grant = narrowRequestedGrant(rules, client, form({ scope: 'a b', resource: 'urn:b' }), clientOnlyPolicy);
  t.same([grant.scopes.scopes, grant.scopes.audiences, grant.resources], [['b'], ['urn:b'], ['urn:b']]);
  t.equal(narrowRequestedGrant(rules, client, form({ scope: 'a' }), clientOnlyPolicy).resources, undefined);
});

t.test('a redemption without resource takes the whole grant and binds nothing', async (t) => {
  const narrowed = narrowStoredGrant(rules, client, stored, form({ scope: 'a' }), 'ignored');
  t.same(narrowed.scopes.scopes, ['openid', 'a', 'b'], 'a code redemption has no scope parameter');
  t.equal(narrowed.bound, undefined);
});

t.test('a redemption narrowed by resource binds its refresh token to the whole grant', async (t) => {
  const narrowed = narrowStoredGrant(rules, client, { ...stored, resources: ['urn:a', 'urn:b'] }, form({ resource: 'urn:a' }), 'ignored');
  t.same(narrowed.scopes.scopes, ['openid', 'a']);
  t.same(narrowed.bound, { scopes: ['openid', 'a', 'b'], resources: ['urn:a', 'urn:b'] });
});

t.test('refuses a resource the grant did not name', async (t) => {
  t.equal(
    oauthErrorOf(() => narrowStoredGrant(rules, client, { ...stored, resources: ['urn:a'] }, form({ resource: 'urn:b' }), 'narrows')),
    'invalid_target: The requested resource exceeds the resources originally granted.',
  );
});

t.test('a refresh may ask for fewer scopes, never another one', async (t) => {
  t.same(narrowStoredGrant(rules, client, stored, form({ scope: 'a' }), 'narrows').scopes.scopes, ['a']);
  t.same(
    narrowStoredGrant(rules, client, stored, form({ scope: ' ' }), 'narrows').scopes.scopes,
    ['openid', 'a', 'b'],
    'an empty scope is an omitted one',
  );
  t.equal(
    oauthErrorOf(() => narrowStoredGrant(rules, client, { scopes: ['a'] }, form({ scope: 'a b' }), 'narrows')),
    'invalid_scope: The requested scope exceeds the scope originally granted.',
  );
});
