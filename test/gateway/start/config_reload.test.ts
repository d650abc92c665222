// Config reload without a restart (RunningGateway.reload, what SIGHUP calls; docs/operations.md,
// "Reload"), on a real gateway over HTTP with the memory store: the state lives in this process,
// so a reload that dropped it would show at once.
import t from 'tap';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { addPasswordFixtures, offlineUserClient, passwordFixtures } from '../../helpers/password_users.js';
import { sha256Secret, startTestGateway } from '../../helpers/test_gateway.js';

const fixtures = await passwordFixtures();
const gw = await startTestGateway(t, {
  patch: (raw) => {
    addPasswordFixtures(raw, fixtures);
    (raw.clients as unknown[]).push(offlineUserClient('app'));
  },
});

async function token(clientId: string, form: Record<string, string>, secret = 'secret') {
  const res = await fetch(gw.tokenUrl, {
    method: 'POST',
    headers: { authorization: basicAuthorization(clientId, secret), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

const newClient = {
  clientId: 'added',
  clientSecrets: [{ value: sha256Secret('added-secret') }],
  allowedGrantTypes: ['client_credentials'],
  allowedScopes: ['api2'],
};
const addClient = (raw: Record<string, unknown>) => (raw.clients as unknown[]).push(newClient);

t.test('clients and users change; refresh tokens issued before stay usable', async (t) => {
  const before = await token('app', { grant_type: 'password', username: 'alice', password: 'alice-pw', scope: 'api1 offline_access' });
  t.equal(before.status, 200);
  t.equal((await token('added', { grant_type: 'client_credentials' }, 'added-secret')).status, 401, 'not there yet');

  const result = await gw.reloadWith((raw) => {
    addClient(raw);
    (raw.clients as { clientId: string }[]).splice(
      (raw.clients as { clientId: string }[]).findIndex((c) => c.clientId === 'm2m'),
      1,
    );
    (raw.users as { username: string; enabled?: boolean }[]).find((u) => u.username === 'bob')!.enabled = true;
  });
  t.same(result, { applied: true, problems: [], needsRestart: [] });

  const added = await token('added', { grant_type: 'client_credentials' }, 'added-secret');
  t.equal(added.status, 200, 'a client added to the file gets tokens');
  t.equal(added.body.scope, 'api2');
  t.equal((await token('m2m', { grant_type: 'client_credentials' })).status, 401, 'a client removed from the file does not');
  const bob = await token('app', { grant_type: 'password', username: 'bob', password: 'bob-pw', scope: 'api1' });
  t.equal(bob.status, 200, 'a user enabled in the file signs in (the workers read the new users)');

  const refreshed = await token('app', { grant_type: 'refresh_token', refresh_token: before.body.refresh_token as string });
  t.equal(refreshed.status, 200, 'the refresh token issued before the reload is still good');
  t.ok(refreshed.body.access_token);
});

t.test('a config that does not validate is refused with the start-up messages; the running one stays', async (t) => {
  const result = await gw.reloadWith((raw) => {
    addClient(raw);
    raw.trustedProxies = ['10.0.0.0/40'];
    (raw.clients as { allowedGrantTypes: string[] }[])[0]!.allowedGrantTypes = ['pasword'];
  });
  t.equal(result.applied, false);
  t.same(result.needsRestart, []);
  t.match(result.problems, [{ path: 'trustedProxies[0]', message: 'must be an IPv4 or IPv6 address or CIDR, e.g. 10.0.0.0/8' }]);
  t.equal((await token('added', { grant_type: 'client_credentials' }, 'added-secret')).status, 200, 'the previous reload stays in service');

  const crossReference = await gw.reloadWith((raw) => {
    (raw.clients as { allowedGrantTypes: string[] }[])[0]!.allowedGrantTypes = ['pasword'];
  });
  t.equal(crossReference.applied, false);
  t.match(crossReference.problems, [{ path: 'clients[0].allowedGrantTypes[0]', message: /pasword/ }]);
  t.equal((await token('added', { grant_type: 'client_credentials' }, 'added-secret')).status, 200);
});

t.test('what only a restart can change is reported and kept; the rest applies', async (t) => {
  const threads = gw.config.workers.threads;
  const result = await gw.reloadWith((raw) => {
    addClient(raw);
    raw.workers = { threads: threads + 1 };
    raw.listen = { host: '127.0.0.1', port: 1 };
    raw.store = { type: 'memory', maxRecords: 500 };
    raw.signing = { algorithm: 'EdDSA' };
  });
  t.equal(result.applied, true);
  t.same([...result.needsRestart].sort(), ['listen.port', 'signing.algorithm', 'store.maxRecords', 'workers.threads']);
  t.equal(gw.config.signing.algorithm, 'ES256', 'the running algorithm stays');
  t.equal(gw.config.workers.threads, threads, 'the running thread count stays');
  t.equal(gw.config.listen.port, gw.port);
  t.equal((await token('added', { grant_type: 'client_credentials' }, 'added-secret')).status, 200, 'and the clients applied');
  t.equal((await fetch(`${gw.url}/healthz`)).status, 200, 'still listening where it was');
});
