// Validators fail closed (validators/README.md, "When things go wrong"): a result Tessera did not
// build, a subject that is not a non-empty string, claims of the wrong shape, claims that would
// overwrite what the service sets, or a sign-in (identityProvider, authTime) that cannot be true
// are refused as invalid_grant, never issued, and the log says why in one line naming the
// validator. End to end: `tessera start` in a child process, so the
// worker threads' own log lines are read as an operator reads them.
import t from 'tap';
import { fileURLToPath } from 'node:url';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { startSpawnedGateway, type LogLine } from '../../helpers/spawned_gateway.js';
import { sha256Secret } from '../../helpers/test_gateway.js';

const fixture = fileURLToPath(new URL('../../fixtures/validators/bad_results.ts', import.meta.url));

t.test('a validator result that is not a well-formed success never issues a token', async (t) => {
  const gateway = await startSpawnedGateway(t, {
    validators: [fixture],
    patch: (raw) => {
      (raw.clients as unknown[]).push({
        clientId: 'ext',
        clientSecrets: [{ value: sha256Secret('secret') }],
        allowedGrantTypes: ['test_bad_result'],
        allowedScopes: ['api1'],
      });
    },
  });
  const url = gateway.url;
  const logLines = gateway.logLines;

  const post = async (params: Record<string, string>) => {
    const res = await fetch(`${url}/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization('ext') },
      body: new URLSearchParams({ grant_type: 'test_bad_result', scope: 'api1', ...params }).toString(),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  const good = await post({});
  t.equal(good.status, 200, 'the fixture issues a token when its result is well formed');
  t.ok(typeof good.body.access_token === 'string');

  const cases: [string, Record<string, string>, RegExp][] = [
    ['a plain object, not built by GrantValidationResult', { case: 'plain_object' }, /not built by GrantValidationResult/],
    ['success(123 as any)', { case: 'numeric_subject' }, /subject that is not a non-empty string/],
    ["success('')", { case: 'empty_subject' }, /subject that is not a non-empty string/],
    ['success({ id } as any)', { case: 'object_subject' }, /subject that is not a non-empty string/],
    ['claims that are a string', { case: 'claims_string' }, /claims that are neither/],
    ['claim pairs with a number value', { case: 'claims_pairs' }, /\{ type, value \} pairs of strings/],
    ['a claim whose value is a function', { case: 'claims_function' }, /claim department a value that is not a JSON claim value/],
    ['an act claim that is not an object', { case: 'act_string' }, /act claim that is not an object/],
    ...['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti', 'client_id', 'cnf', 'scope', 'auth_time', 'idp'].map(
      (claim): [string, Record<string, string>, RegExp] => [
        `the protected claim ${claim}`,
        { case: 'protected', claim },
        new RegExp(`protected claim ${claim}$`),
      ],
    ),
    // amr may be set, from the RFC 8176 registry only ("forged" is not in it).
    ['an amr outside the RFC 8176 registry', { case: 'protected', claim: 'amr' }, /amr that is not a non-empty list of RFC 8176/],
    ['the protected claim sub as a pair', { case: 'protected_pair', claim: 'sub' }, /protected claim sub$/],
    ['an empty identityProvider', { case: 'idp_empty' }, /identityProvider that is not a non-empty string/],
    ['an identityProvider that is a number', { case: 'idp_number' }, /identityProvider that is not a non-empty string/],
    ['an authTime in the future', { case: 'auth_time_future' }, /authTime in the future/],
    ['an authTime with a fraction', { case: 'auth_time_float' }, /authTime that is not a positive integer/],
    ['an authTime that is a string', { case: 'auth_time_string' }, /authTime that is not a positive integer/],
    ['an identityProvider for a client-only result', { case: 'client_only_idp' }, /for a client-only result/],
    ['an identityProvider without a sign-in', { case: 'idp_no_sign_in' }, /identityProvider without a sign-in/],
  ];
  for (const [name, params, reason] of cases) {
    const before = logLines().length;
    const r = await post(params);
    t.equal(r.status, 400, `${name}: 400`);
    t.same(r.body, { error: 'invalid_grant' }, `${name}: invalid_grant and nothing else`);
    // Worker threads write their own lines; give them a moment to arrive.
    const end = Date.now() + 5000;
    let refusals: LogLine[] = [];
    while (Date.now() < end) {
      refusals = logLines()
        .slice(before)
        .filter((line) => line.msg.startsWith('validator result refused'));
      if (refusals.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    t.equal(refusals.length, 1, `${name}: one log line`);
    t.match(refusals[0]?.reason, reason, `${name}: the log says why`);
    t.equal(refusals[0]?.validator, 'bad_results.ts', `${name}: the log names the validator's module`);
    t.equal(refusals[0]?.grantType, 'test_bad_result', `${name}: and its grant type`);
  }

  const mutated = await post({ case: 'mutated' });
  t.equal(mutated.status, 200, 'a built result cannot be changed after the fact');
  const payload = JSON.parse(Buffer.from(String(mutated.body.access_token).split('.')[1] ?? '', 'base64url').toString('utf8')) as {
    sub: unknown;
  };
  t.equal(payload.sub, 'alice', 'the token is for the subject the result was built with');
  t.notMatch(gateway.output(), /forged|hunter2/, 'no refused value reaches the log');
});
