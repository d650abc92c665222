// The profile service (validators/README.md, "Profile service"; IdentityServer's IProfileService):
// dropped into validatorsDir, it supplies users' claims to ID tokens, UserInfo and access tokens,
// and says whether a user may still get tokens, on every issuance and at UserInfo.
import t from 'tap';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { decodeJwt } from 'jose';
import { startTestGateway } from '../helpers/test_gateway.js';
import { addPasswordFixtures, offlineUserClient, passwordFixtures } from '../helpers/password_users.js';
import { AuthorizeFlow, callbackUri, codeFlowClient, pkcePair } from '../helpers/authorize_flow.js';
import { tokenRequest } from '../helpers/token_request.js';

const fixtures = await passwordFixtures();
const example = (name: string) => readFileSync(new URL(`../../validators/examples/${name}`, import.meta.url), 'utf8');

async function userInfo(url: string, accessToken: string) {
  const res = await fetch(`${url}/connect/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } });
  return { status: res.status, challenge: res.headers.get('www-authenticate'), body: (await res.json()) as Record<string, unknown> };
}

/** A code for alice at the `web` client, and its verifier. */
async function codeFor(flow: AuthorizeFlow, scope: string): Promise<{ code: string; verifier: string }> {
  const { verifier, challenge } = pkcePair();
  const response = await flow.code(flow.params('web', challenge, { scope }));
  return { code: response.get('code') as string, verifier };
}

t.test('the example profile service (validators/examples) gives ID tokens, UserInfo and access tokens their claims', async (t) => {
  const dir = t.testdir({
    'people_profile_service.ts': example('people_profile_service.ts'),
    'people.json': example('people.json'),
  });
  const gw = await startTestGateway(t, {
    validatorsDir: dir,
    watchValidators: false,
    patch: (raw) => {
      addPasswordFixtures(raw, fixtures);
      (raw.identityResources as unknown[]).push({ name: 'email', claims: ['email', 'email_verified'] });
      (raw.clients as unknown[]).push(codeFlowClient('web', { allowedScopes: ['openid', 'profile', 'email', 'api1', 'offline_access'] }));
    },
  });
  const flow = new AuthorizeFlow(gw);
  const { code, verifier } = await codeFor(flow, 'openid profile email api1 offline_access');
  const redeemed = await tokenRequest(gw.url, 'web', {
    grant_type: 'authorization_code',
    code,
    redirect_uri: callbackUri,
    code_verifier: verifier,
  });
  t.equal(redeemed.status, 200, JSON.stringify(redeemed.body));
  const idToken = decodeJwt(redeemed.body.id_token as string);
  t.equal(idToken.name, 'Alice Liddell', "the ID token's name is the profile's, not the configured user's ('Alice')");
  t.equal(idToken.email, 'alice@example.com');
  t.equal(idToken.email_verified, true);
  t.equal(idToken.family_name, undefined, 'a claim no granted scope releases stays out');
  const accessToken = decodeJwt(redeemed.body.access_token as string);
  t.equal(accessToken.department, 'research', "the profile's access-token claims are added");
  t.equal(accessToken.sub, 'sub-alice');

  const info = await userInfo(gw.url, redeemed.body.access_token as string);
  t.equal(info.status, 200);
  t.same(info.body, { sub: 'sub-alice', name: 'Alice Liddell', email: 'alice@example.com', email_verified: true });

  const refreshed = await tokenRequest(gw.url, 'web', {
    grant_type: 'refresh_token',
    refresh_token: redeemed.body.refresh_token as string,
  });
  t.equal(refreshed.status, 200);
  t.equal(decodeJwt(refreshed.body.id_token as string).name, 'Alice Liddell', 'a refresh asks the profile service again');
});

t.test(
  'isActive false refuses password, code, refresh and UserInfo; a failing profile service fails the request, not the worker',
  async (t) => {
    // The flags live next to validatorsDir, not in it: a user's state, not the validators'.
    const flags = t.testdirName;
    const source = `
    import { existsSync } from 'node:fs';
    import type { IsActiveContext, ProfileDataRequestContext, ProfileService } from 'tessera/validator';
    export default class SwitchableProfileService implements ProfileService {
      readonly kind = 'profile_service';
      async getProfileData(context: ProfileDataRequestContext) {
        const mode = context.client.properties.profileMode;
        if (mode === 'throw') throw new Error('the directory is down: hunter2');
        if (mode === 'slow') await new Promise((resolve) => setTimeout(resolve, 1500));
        if (mode === 'protected') return { sub: 'mallory' };
        if (mode === 'userinfo-throw' && context.caller === 'userinfo') throw new Error('the directory is down');
        if (mode === 'userinfo-slow' && context.caller === 'userinfo') await new Promise((resolve) => setTimeout(resolve, 1500));
        if (context.caller === 'access_token') return { plan: context.client.properties.plan ?? 'none' };
        return { name: 'Profile of ' + context.subject };
      }
      async isActive(context: IsActiveContext) {
        return !existsSync(${JSON.stringify(flags)} + '/inactive-' + context.subject);
      }
    }
  `;
    const asAlice = `
    import { GrantValidationResult, type ExtensionGrantValidationContext } from 'tessera/validator';
    export default class AsAlice {
      readonly grantType = 'urn:example:grant:as-alice';
      async validate(context: ExtensionGrantValidationContext) {
        context.result = GrantValidationResult.success('sub-alice', this.grantType);
      }
    }
  `;
    t.testdir({ validators: { 'switchable_profile_service.ts': source, 'as_alice.ts': asAlice } });
    const dir = path.join(flags, 'validators');
    const gw = await startTestGateway(t, {
      validatorsDir: dir,
      watchValidators: false,
      patch: (raw) => {
        addPasswordFixtures(raw, fixtures);
        // Under the 1.5 s of the slow modes with room for a loaded machine: at 300 ms a quick
        // profile service call was once answered 503 in a full parallel run (load 14).
        raw.validatorTimeoutMs = 900;
        const scopes = { allowedScopes: ['openid', 'profile', 'api1', 'offline_access'] };
        (raw.clients as unknown[]).push(
          codeFlowClient('web'),
          offlineUserClient('extension', { allowedGrantTypes: ['urn:example:grant:as-alice'], allowedScopes: ['api1'] }),
          offlineUserClient('ro-offline', { ...scopes, properties: { plan: 'gold' } }),
          offlineUserClient('ro-throw', { ...scopes, properties: { profileMode: 'throw' } }),
          offlineUserClient('ro-slow', { ...scopes, properties: { profileMode: 'slow' } }),
          offlineUserClient('ro-protected', { ...scopes, properties: { profileMode: 'protected' } }),
          offlineUserClient('ro-userinfo-throw', { ...scopes, properties: { profileMode: 'userinfo-throw' } }),
          offlineUserClient('ro-userinfo-slow', { ...scopes, properties: { profileMode: 'userinfo-slow' } }),
        );
      },
    });
    const password = (clientId: string) =>
      tokenRequest(gw.url, clientId, {
        grant_type: 'password',
        username: 'alice',
        password: 'alice-pw',
        scope: 'openid profile api1 offline_access',
      });

    const signedIn = await password('ro-offline');
    t.equal(signedIn.status, 200, JSON.stringify(signedIn.body));
    t.equal(decodeJwt(signedIn.body.access_token as string).plan, 'gold', "the profile service reads the client's properties");
    const flow = new AuthorizeFlow(gw);
    const { code, verifier } = await codeFor(flow, 'openid api1');
    const redeem = () =>
      tokenRequest(gw.url, 'web', { grant_type: 'authorization_code', code, redirect_uri: callbackUri, code_verifier: verifier });
    const refresh = () =>
      tokenRequest(gw.url, 'ro-offline', { grant_type: 'refresh_token', refresh_token: signedIn.body.refresh_token as string });

    const flag = path.join(flags, 'inactive-sub-alice');
    writeFileSync(flag, '');
    const refusedPassword = await password('ro-offline');
    t.equal(refusedPassword.status, 400);
    t.same(refusedPassword.body.error, 'invalid_grant', 'password: invalid_grant');
    t.same((await redeem()).body.error, 'invalid_grant', 'authorization_code: invalid_grant');
    t.same((await refresh()).body.error, 'invalid_grant', 'refresh_token: invalid_grant');
    const extension = () => tokenRequest(gw.url, 'extension', { grant_type: 'urn:example:grant:as-alice', scope: 'api1' });
    t.same((await extension()).body.error, 'invalid_grant', 'an extension grant for the user: invalid_grant');
    const info = await userInfo(gw.url, signedIn.body.access_token as string);
    t.equal(info.status, 401, 'UserInfo: 401');
    t.equal(info.body.error, 'invalid_token');
    t.match(info.challenge, /^Bearer error="invalid_token"/);

    rmSync(flag);
    const again = await refresh();
    t.equal(again.status, 200, 'the refresh token was refused, not revoked');
    t.equal((await redeem()).status, 200, 'the code stayed with its client');
    t.equal((await extension()).status, 200, 'the extension grant issues again');
    const active = await userInfo(gw.url, again.body.access_token as string);
    t.same(active.body, { sub: 'sub-alice', name: 'Profile of sub-alice' }, 'UserInfo answers from the profile service');

    const thrown = await password('ro-throw');
    t.same([thrown.status, thrown.body], [400, { error: 'invalid_grant' }], 'a throw: invalid_grant, the message only logged');
    const slow = await password('ro-slow');
    t.equal(slow.status, 503, 'no answer in validatorTimeoutMs: 503');
    t.equal(slow.body.error, 'temporarily_unavailable');
    const forged = await password('ro-protected');
    t.same([forged.status, forged.body], [400, { error: 'invalid_grant' }], 'a registered claim from the profile service: refused');
    const throwsAtUserInfo = await password('ro-userinfo-throw');
    const thrownAtUserInfo = await userInfo(gw.url, throwsAtUserInfo.body.access_token as string);
    t.same([thrownAtUserInfo.status, thrownAtUserInfo.body.error], [500, 'server_error'], 'UserInfo: a throw is the server at fault');
    const slowAtUserInfo = await userInfo(gw.url, (await password('ro-userinfo-slow')).body.access_token as string);
    t.same([slowAtUserInfo.status, slowAtUserInfo.body.error], [503, 'temporarily_unavailable'], 'UserInfo: a timeout is 503');
    t.equal((await password('ro-offline')).status, 200, 'the worker lives on');
  },
);
