// Expensive work has its own lane (docs/operations.md, "Lanes"): password checks, whether from the
// password grant or the login pages, run at most `workers.passwordConcurrency` at once with at
// most `workers.passwordMaxQueue` waiting; beyond that the answer is a fast 503 with Retry-After,
// and client_credentials never waits behind them. A password validator that takes 400 ms stands
// in for a slow directory or a costly hash, so the lane is full for a known time.
import t from 'tap';
import { AuthorizeFlow, callbackUri, codeFlowClient, pkcePair } from '../helpers/authorize_flow.js';
import { basicAuthorization } from '../helpers/basic_authorization.js';
import { addPasswordFixtures, passwordFixtures } from '../helpers/password_users.js';
import { startTestGateway, type TestGateway } from '../helpers/test_gateway.js';

const fixtures = await passwordFixtures();

async function timed(gw: TestGateway, clientId: string, body: string) {
  const started = performance.now();
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { authorization: basicAuthorization(clientId), 'content-type': 'application/x-www-form-urlencoded' },
    body,
  });
  const text = await res.text();
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: text, ms: performance.now() - started };
}

t.test('a flood of password checks queues only behind itself', async (t) => {
  const dir = t.testdir({
    'slow_password_validator.ts': `
      import { GrantValidationResult, type ResourceOwnerPasswordValidator, type ResourceOwnerPasswordValidationContext } from 'tessera/validator';
      export default class SlowPasswordValidator implements ResourceOwnerPasswordValidator {
        readonly kind = 'resource_owner_password';
        async validate(context: ResourceOwnerPasswordValidationContext): Promise<void> {
          await new Promise((resolve) => setTimeout(resolve, 400));
          if (context.password === 'right') context.result = GrantValidationResult.success('user-' + context.userName, 'pwd');
        }
      }
    `,
  });
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      addPasswordFixtures(raw, fixtures);
      raw.validatorsDir = dir;
      raw.workers = { threads: 1, passwordConcurrency: 1, passwordMaxQueue: 2 };
      raw.throttling = { password: { maxFailures: 1000, windowSeconds: 60 }, passwordPerUser: { maxFailures: 1000, windowSeconds: 60 } };
      (raw.clients as unknown[]).push(codeFlowClient('web'));
    },
  });

  const floods = Array.from({ length: 10 }, (_, i) => timed(gw, 'ro', `grant_type=password&username=u${i}&password=right`));
  const cc = await Promise.all(Array.from({ length: 5 }, () => timed(gw, 'm2m', 'grant_type=client_credentials&scope=api1')));
  // The login page of the code flow, while the lane is still full: the form again, with a 503.
  const flow = new AuthorizeFlow(gw);
  const login = await flow.authorize({
    client_id: 'web',
    redirect_uri: callbackUri,
    response_type: 'code',
    scope: 'openid api1',
    code_challenge: pkcePair().challenge,
    code_challenge_method: 'S256',
  });
  const busy = await flow.login(login, 'alice', 'alice-pw');
  const answers = await Promise.all(floods);

  t.comment(JSON.stringify(answers.map((a) => [a.status, Math.round(a.ms)])), busy.status);
  const granted = answers.filter((a) => a.status === 200);
  const shed = answers.filter((a) => a.status === 503);
  t.equal(granted.length, 3, 'one running and two waiting: three password checks were accepted');
  t.equal(shed.length, 7, 'the rest were refused');
  t.ok(
    shed.every((a) => a.retryAfter === '1' && a.body.startsWith('{"error":"temporarily_unavailable"')),
    '503 temporarily_unavailable with Retry-After',
  );
  // workers.passwordShedDelayMs (default 1000): a flood that ignores Retry-After gets one refusal
  // per connection and second, not one per round trip.
  t.ok(
    shed.every((a) => a.ms >= 950 && a.ms < 3000),
    'each refusal was held for about workers.passwordShedDelayMs (1 s) before it was sent',
  );
  t.ok(
    cc.every((a) => a.status === 200),
    'client_credentials got its tokens',
  );
  t.ok(Math.max(...cc.map((a) => a.ms)) < Math.min(...granted.map((a) => a.ms)), 'and each before the first password check was done');
  t.equal(busy.status, 503, 'the login page answers 503 while the lane is full');
  t.equal(busy.headers.get('retry-after'), '1', 'with Retry-After');
  t.match(busy.body, 'name="password"', 'and shows the form again');
});
