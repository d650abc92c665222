import t from 'tap';
import { oauthErrorOf } from '../../helpers/oauth_error_of.js';
import { clientSchema } from '../../../gateway/config/schema.js';
import { registerClient } from '../../../core/client_model.js';
import { requestedResources, selectResources } from '../../../core/rules/resource_indicators.js';
import { clientOnlyPolicy, ScopeRules } from '../../../core/rules/scope_rules.js';
import type { FormParams } from '../../../wire/token_task.js';

const rules = new ScopeRules({
  identityResources: [],
  apiScopes: [{ name: 'a' }, { name: 'b' }],
  apiResources: [
    { name: 'urn:a', scopes: ['a'] },
    { name: 'https://b.example/api', scopes: ['b'] },
  ],
});
const client = registerClient(clientSchema.parse({ clientId: 'c', allowedGrantTypes: ['client_credentials'], allowedScopes: ['a', 'b'] }));
const granted = rules.resolve(client, undefined, clientOnlyPolicy);
const params = (resource?: string): FormParams => (resource === undefined ? {} : { resource });

t.test('reads the resource values in order without repeats', async (t) => {
  t.equal(requestedResources(params()), undefined);
  t.same(requestedResources(params('urn:a https://b.example/api urn:a')), ['urn:a', 'https://b.example/api']);
});

t.test('refuses a value that is not an absolute URI without a fragment', async (t) => {
  for (const value of ['a', '/api', 'urn:a#f', 'urn:a\turn:b', '1urn:a', 'urn:a '])
    t.equal(
      oauthErrorOf(() => requestedResources(params(value))),
      'invalid_target: The resource parameter must be an absolute URI without a fragment.',
      JSON.stringify(value),
    );
});

t.test('without resource anywhere, the granted scopes are kept as they are', async (t) => {
  t.equal(selectResources(rules, granted, undefined, undefined), granted);
});

t.test('narrows to the grant resources when the request names none', async (t) => {
  t.same(selectResources(rules, granted, undefined, ['urn:a']).audiences, ['urn:a']);
});

t.test('a request may name some of the grant resources, never another', async (t) => {
  t.same(selectResources(rules, granted, ['https://b.example/api'], ['urn:a', 'https://b.example/api']).scopes, ['b']);
  t.equal(
    oauthErrorOf(() => selectResources(rules, granted, ['https://b.example/api'], ['urn:a'])),
    'invalid_target: The requested resource exceeds the resources originally granted.',
  );
});
