import t from 'tap';
import * as oidc from 'openid-client';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { startTestGateway } from '../helpers/test_gateway.js';
import { addPasswordFixtures, passwordFixtures } from '../helpers/password_users.js';

const fixtures = await passwordFixtures();

async function clientFor(issuer: string, clientId = 'ro') {
  return oidc.discovery(new URL(issuer), clientId, undefined, oidc.ClientSecretBasic('secret'), { execute: [oidc.allowInsecureRequests] });
}

t.test('openid-client gets a password-grant token that a resource server accepts', async (t) => {
  const gw = await startTestGateway(t, { patch: (raw) => addPasswordFixtures(raw, fixtures) });
  const config = await clientFor(gw.config.issuer);
  const tokens = await oidc.genericGrantRequest(config, 'password', {
    username: 'alice',
    password: 'alice-pw',
    scope: 'openid profile api1',
  });
  t.equal(tokens.scope, 'openid profile api1');
  const jwks = createRemoteJWKSet(new URL(`${gw.url}/.well-known/openid-configuration/jwks`));
  const { payload } = await jwtVerify(tokens.access_token, jwks, { issuer: gw.config.issuer, audience: 'urn:api1', typ: 'at+jwt' });
  t.equal(payload.sub, 'sub-alice');
  t.same(payload.amr, ['pwd']);
  t.equal(payload.idp, 'local');
  t.equal(payload.client_id, 'ro');

  const refused: unknown = await oidc.genericGrantRequest(config, 'password', { username: 'alice', password: 'nope' }).then(
    () => 'resolved',
    (e: unknown) => e,
  );
  t.match(refused, { error: 'invalid_grant', status: 400, error_description: 'The username or password is incorrect.' });
});

t.test('a password validator dropped into validatorsDir replaces the configured users', async (t) => {
  const dir = t.testdir({
    'directory_password_validator.ts': `
      import { GrantValidationResult, type ResourceOwnerPasswordValidator, type ResourceOwnerPasswordValidationContext } from 'tessera/validator';
      export default class DirectoryPasswordValidator implements ResourceOwnerPasswordValidator {
        readonly kind = 'resource_owner_password';
        async validate(context: ResourceOwnerPasswordValidationContext): Promise<void> {
          if (context.userName === 'dir-user' && context.password === 'dir-pw') {
            context.result = GrantValidationResult.success('directory-42', 'pwd', { claims: { idp: 'directory', department: 'R&D' } });
          } else if (context.userName === 'locked') {
            context.result = GrantValidationResult.error('invalid_grant', 'The account is locked.');
          }
          if (context.request.tenant !== undefined && context.request.client.clientId !== 'ro') throw new Error('unexpected');
        }
      }
    `,
  });
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      addPasswordFixtures(raw, fixtures);
      raw.validatorsDir = dir;
    },
  });
  const config = await clientFor(gw.config.issuer);
  const tokens = await oidc.genericGrantRequest(config, 'password', {
    username: 'dir-user',
    password: 'dir-pw',
    scope: 'api1',
    acr_values: 'tenant:t1',
  });
  const jwks = createRemoteJWKSet(new URL(`${gw.url}/.well-known/openid-configuration/jwks`));
  const { payload } = await jwtVerify(tokens.access_token, jwks, { issuer: gw.config.issuer, typ: 'at+jwt' });
  t.equal(payload.sub, 'directory-42');
  t.equal(payload.idp, 'directory', 'the validator names the identity provider');
  t.equal(payload.department, 'R&D');
  t.equal(payload.tenant, 't1');
  t.same(payload.amr, ['pwd']);

  const configured: unknown = await oidc.genericGrantRequest(config, 'password', { username: 'alice', password: 'alice-pw' }).then(
    () => 'resolved',
    (e: unknown) => e,
  );
  t.match(configured, { error: 'invalid_grant' }, 'configured users no longer sign in');
  const locked: unknown = await oidc.genericGrantRequest(config, 'password', { username: 'locked', password: 'x' }).then(
    () => 'resolved',
    (e: unknown) => e,
  );
  t.match(locked, { error: 'invalid_grant', error_description: 'The account is locked.' }, "the validator's own description is kept");
});
