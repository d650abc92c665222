// Security events of password checks (docs/operations.md, "Logs"): a failed sign-in and the start
// of a block are one info line each, from the worker thread, with the client, the username and the
// caller's address, never the password. The worker's lines go to stdout, so the gateway runs as a
// child process (test/helpers/spawned_gateway.ts).
import t, { type Test } from 'tap';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { addPasswordFixtures, passwordFixtures } from '../../helpers/password_users.js';
import { startSpawnedGateway } from '../../helpers/spawned_gateway.js';

const fixtures = await passwordFixtures();

/** A spawned gateway with the password throttle at `limits`, and one wrong password for alice at `ro`. */
async function wrongPasswords(t: Test, limits: { maxFailures: number; windowSeconds: number }) {
  const gw = await startSpawnedGateway(t, {
    validators: [],
    patch: (raw) => {
      addPasswordFixtures(raw, fixtures);
      raw.logLevel = 'info';
      raw.throttling = { password: limits };
    },
  });
  const attempt = () =>
    fetch(gw.tokenUrl, {
      method: 'POST',
      headers: { authorization: basicAuthorization('ro'), 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=password&username=alice&password=not-her-password-xyz',
    }).then((r) => r.status);
  return { gw, attempt };
}

t.test('a failed password check and a block start are logged with who and from where', async (t) => {
  const { gw, attempt } = await wrongPasswords(t, { maxFailures: 2, windowSeconds: 60 });
  t.same([await attempt(), await attempt(), await attempt()], [400, 400, 429]);
  const failed = await gw.waitForLog('a failed sign-in line', (l) => l.msg === 'password sign-in failed');
  t.match(failed, { clientId: 'ro', username: 'alice', address: '127.0.0.1', reason: 'wrong credentials', thread: 'worker' });
  t.type(failed.pid, 'number', 'the worker line names its process');
  t.ok(typeof failed.threadId === 'number' && failed.threadId > 0, 'and its thread');
  const blocked = await gw.waitForLog('a block line', (l) => l.msg === 'password attempts blocked');
  t.match(blocked, { clientId: 'ro', username: 'alice', address: '127.0.0.1', per: 'username at this client' });
  t.notMatch(gw.output(), /not-her-password-xyz/, 'the password is never logged');
});

t.test('the end of a password block is logged once, when its window is over', async (t) => {
  const { gw, attempt } = await wrongPasswords(t, { maxFailures: 1, windowSeconds: 2 });
  t.same([await attempt(), await attempt(), await attempt()], [400, 429, 429]);
  await gw.waitForLog('a block line', (l) => l.msg === 'password attempts blocked');
  t.notOk(gw.output().includes('password block ended'), 'not ended while the window runs');
  const ended = await gw.waitForLog('the end of the block', (l) => l.msg === 'password block ended', 6000);
  t.match(ended, { clientId: 'ro', username: 'alice', address: '127.0.0.1', per: 'username at this client' });
  t.equal(gw.output().split('password block ended').length - 1, 1, 'one end line for one block');
  t.equal(await attempt(), 400, 'after the block a wrong password is a wrong password again');
});
