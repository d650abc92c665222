// A validator describes the sign-in of its result (validators/README.md, "The sign-in"): the
// identity provider and the authentication time reach the token; and it reads its client's
// `properties` from the config. Refusals of bad values: test/workers/grants/validator_fail_closed.test.ts.
import t from 'tap';
import { decodeJwt } from 'jose';
import { sha256Secret, startTestGateway } from '../helpers/test_gateway.js';
import { addPasswordFixtures, passwordFixtures } from '../helpers/password_users.js';
import { tokenRequest } from '../helpers/token_request.js';

const fixtures = await passwordFixtures();
// RFC 6749 §4.5: a new grant type is an absolute URI.
const partnerGrant = 'urn:example:params:oauth:grant-type:partner-sso';

t.test("a validator's identityProvider and authTime reach the token, and validators read the client's properties", async (t) => {
  const dir = t.testdir({
    'partner_sso.ts': `
      import { GrantValidationResult, type ExtensionGrantValidationContext, type ExtensionGrantValidator } from 'tessera/validator';
      export default class PartnerSsoValidator implements ExtensionGrantValidator {
        readonly grantType = ${JSON.stringify(partnerGrant)};
        async validate(context: ExtensionGrantValidationContext): Promise<void> {
          const { properties } = context.request.client;
          context.result = GrantValidationResult.success('partner-user-7', this.grantType, {
            identityProvider: properties.partnerIdp,
            authTime: Number(context.request.raw.get('signed_in_at')),
            claims: { partner_tier: properties.tier ?? 'none', frozen: Object.isFrozen(properties) },
          });
        }
      }
    `,
    'directory_password.ts': `
      import { GrantValidationResult, type ResourceOwnerPasswordValidator, type ResourceOwnerPasswordValidationContext } from 'tessera/validator';
      export default class DirectoryPasswordValidator implements ResourceOwnerPasswordValidator {
        readonly kind = 'resource_owner_password';
        async validate(context: ResourceOwnerPasswordValidationContext): Promise<void> {
          if (context.password !== 'dir-pw') return;
          context.result = GrantValidationResult.success('dir-' + context.userName, 'pwd', {
            identityProvider: context.request.client.properties.directory,
          });
        }
      }
    `,
  });
  const gw = await startTestGateway(t, {
    validatorsDir: dir,
    watchValidators: false,
    patch: (raw) => {
      addPasswordFixtures(raw, fixtures);
      (raw.clients as unknown[]).push(
        {
          clientId: 'partner',
          clientSecrets: [{ value: sha256Secret('secret') }],
          allowedGrantTypes: [partnerGrant],
          allowedScopes: ['api1'],
          properties: { partnerIdp: 'partner-sso', tier: 'gold' },
        },
        {
          clientId: 'directory-app',
          clientSecrets: [{ value: sha256Secret('secret') }],
          allowedGrantTypes: ['password'],
          allowedScopes: ['api1'],
          properties: { directory: 'corp-ldap' },
        },
      );
    },
  });

  const signedInAt = Math.floor(Date.now() / 1000) - 600;
  const issued = await tokenRequest(gw.url, 'partner', { grant_type: partnerGrant, scope: 'api1', signed_in_at: String(signedInAt) });
  t.equal(issued.status, 200, JSON.stringify(issued.body));
  const payload = decodeJwt(issued.body.access_token as string);
  t.equal(payload.sub, 'partner-user-7');
  t.equal(payload.idp, 'partner-sso', 'the identity provider the validator named, not "local"');
  t.equal(payload.auth_time, signedInAt, 'when the user authenticated, not when the token was issued');
  t.same(payload.amr, [partnerGrant]);
  t.equal(payload.partner_tier, 'gold', "the validator read its client's properties");
  t.equal(payload.frozen, true, 'read-only');

  const future = await tokenRequest(gw.url, 'partner', {
    grant_type: partnerGrant,
    scope: 'api1',
    signed_in_at: String(signedInAt + 7200),
  });
  t.same([future.status, future.body], [400, { error: 'invalid_grant' }], 'an authentication in the future is refused');

  const password = await tokenRequest(gw.url, 'directory-app', {
    grant_type: 'password',
    username: 'zoe',
    password: 'dir-pw',
    scope: 'api1',
  });
  t.equal(password.status, 200, JSON.stringify(password.body));
  const user = decodeJwt(password.body.access_token as string);
  t.equal(user.sub, 'dir-zoe');
  t.equal(user.idp, 'corp-ldap', "the password validator read its client's properties and named the identity provider");
});
