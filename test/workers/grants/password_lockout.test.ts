// No stranger locks a user out of every client, and spraying one password over many usernames is
// throttled (docs/security.md, "Throttles"): over real HTTP against a real gateway, through the
// public login page (no secret needed) and the password grant, sequentially and in parallel
// bursts of 100. Source addresses are chosen with node:http (fetch cannot).
import t from 'tap';
import { request } from 'node:http';
import { AuthorizeFlow, callbackUri, pkcePair } from '../../helpers/authorize_flow.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { addPasswordFixtures, passwordFixtures } from '../../helpers/password_users.js';
import { startTestGateway, type TestGateway } from '../../helpers/test_gateway.js';

const fixtures = await passwordFixtures();

/** A password grant from `from` (a loopback address), as `client` with its secret. */
function grantFrom(gw: TestGateway, from: string, client: string, params: Record<string, string>): Promise<number> {
  const url = new URL(gw.tokenUrl);
  const body = new URLSearchParams({ grant_type: 'password', ...params }).toString();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        localAddress: from,
        agent: false,
        headers: {
          authorization: basicAuthorization(client),
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const count = (statuses: readonly number[], status: number) => statuses.filter((s) => s === status).length;

t.test('password throttles', async (t) => {
  const gw = await startTestGateway(t, {
    patch: (raw) => {
      addPasswordFixtures(raw, fixtures);
      // A public client of the code flow: anyone may post its login page, no secret needed.
      (raw.clients as unknown[]).push({
        clientId: 'spa',
        requireClientSecret: false,
        allowedGrantTypes: ['authorization_code'],
        allowedScopes: ['openid', 'api1'],
        redirectUris: [callbackUri],
      });
      raw.throttling = {
        password: { maxFailures: 5, windowSeconds: 60 },
        passwordPerUser: { maxFailures: 20, windowSeconds: 60 },
      };
    },
  });
  const loginPage = (flow: AuthorizeFlow) => flow.authorize(flow.params('spa', pkcePair().challenge, { scope: 'openid api1' }));

  t.test("21 posts to a public client's login page do not lock the user out of other clients", async (t) => {
    const flow = new AuthorizeFlow(gw);
    let page = await loginPage(flow);
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) {
      page = await flow.login(page, 'alice', `guess-${i}`);
      statuses.push(page.status);
    }
    t.equal(count(statuses, 400), 5, 'five guesses checked at this client');
    t.equal(count(statuses, 429), 16, 'the others refused unchecked');
    t.equal(await grantFrom(gw, '127.0.0.1', 'ro', { username: 'alice', password: 'alice-pw' }), 200, 'alice signs in at another client');
  });

  t.test('25 wrong passwords at one client do not lock the user out of others', async (t) => {
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++) statuses.push(await grantFrom(gw, '127.0.0.2', 'ro', { username: 'carol', password: `guess-${i}` }));
    t.equal(count(statuses, 400), 5);
    t.equal(count(statuses, 429), 20);
    t.equal(await grantFrom(gw, '127.0.0.1', 'ro2', { username: 'carol', password: 'pässwörd ✓ 密码' }), 200);
  });

  t.test('a parallel burst of 100 on the login page checks five and locks nobody out elsewhere', async (t) => {
    const flow = new AuthorizeFlow(gw);
    const page = await loginPage(flow);
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => flow.login(page, 'dave', `guess-${i}`, {})));
    const statuses = answers.map((a) => a.status);
    t.equal(count(statuses, 400), 5, 'five checked');
    t.equal(count(statuses, 429), 95, 'every other one refused unchecked');
    // dave has tenant acme: the per-user count is of (tenant, idp, username).
    t.equal(await grantFrom(gw, '127.0.0.1', 'ro', { username: 'dave', password: 'dave-pw', acr_values: 'tenant:acme' }), 200);
  });

  t.test('a parallel burst of 100 password grants checks five and locks nobody out elsewhere', async (t) => {
    const guess = (i: number) => grantFrom(gw, '127.0.0.3', 'ro2', { username: 'erin', password: `guess-${i}`, acr_values: 'idp:corp' });
    const statuses = await Promise.all(Array.from({ length: 100 }, (_, i) => guess(i)));
    t.equal(count(statuses, 400), 5);
    t.equal(count(statuses, 429), 95);
    t.equal(await grantFrom(gw, '127.0.0.1', 'ro', { username: 'erin', password: 'erin-pw', acr_values: 'idp:corp' }), 200);
  });

  t.test('one password sprayed over 40 usernames through one client from one address is throttled', async (t) => {
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push(await grantFrom(gw, '127.0.0.4', 'ro', { username: `user-${i}`, password: 'Summer2026!' }));
    t.equal(count(statuses, 400), 20, 'twenty checked (passwordPerAddress)');
    t.equal(count(statuses, 429), 20, 'the rest refused unchecked');
    t.equal(await grantFrom(gw, '127.0.0.4', 'ro2', { username: 'alice', password: 'alice-pw' }), 200, 'another client from that address');
    t.equal(await grantFrom(gw, '127.0.0.5', 'ro', { username: 'alice', password: 'alice-pw' }), 200, 'that client from another address');
    t.equal(await grantFrom(gw, '127.0.0.4', 'ro', { username: 'alice', password: 'alice-pw' }), 429, 'the spraying address is blocked');
  });

  t.test('a burst of 100 sprayed usernames gets twenty checked', async (t) => {
    const guess = (i: number) => grantFrom(gw, '127.0.0.6', 'ro2', { username: `burst-${i}`, password: 'Summer2026!' });
    const statuses = await Promise.all(Array.from({ length: 100 }, (_, i) => guess(i)));
    t.equal(count(statuses, 400), 20);
    t.equal(count(statuses, 429), 80);
  });
});
