/**
 * The admin API on the management listener (docs/operations.md, "Admin API"), on the memory store,
 * and the `tessera clients` commands over it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { AuditEvent } from '../../../gateway/observability/events/audit_event.js';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { runCliInProcess } from '../../helpers/cli_in_process.js';
import { startTestGateway } from '../../helpers/test_gateway.js';

const adminToken = 'admin-token-for-the-admin-api-test-0123456789';
const dir = t.testdir();
const tokenFile = path.join(dir, 'admin.token');
writeFileSync(tokenFile, adminToken);
const events: AuditEvent[] = [];
const eventFile = path.join(dir, 'events.jsonl');
const gateway = await startTestGateway(t, {
  patch: (raw) => {
    raw.clientRegistry = { store: true };
    raw.admin = { tokenFile };
    raw.events = { sink: 'file', file: eventFile };
  },
  onEvent: (event) => events.push(event),
});
const managementUrl = gateway.managementUrl as string;

function admin(method: string, pathname: string, body?: unknown, token = adminToken): Promise<Response> {
  return fetch(`${managementUrl}${pathname}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function tokenStatus(clientId: string, secret: string): Promise<number> {
  const res = await fetch(gateway.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization(clientId, secret) },
    body: 'grant_type=client_credentials',
  });
  await res.arrayBuffer();
  return res.status;
}

const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 20));

t.test('refuses a request without the admin token or with a wrong one', async (t) => {
  const without = await fetch(`${managementUrl}/admin/clients`);
  t.equal(without.status, 401);
  t.equal(without.headers.get('www-authenticate'), 'Bearer realm="admin"');
  t.equal((await admin('GET', '/admin/clients', undefined, `${adminToken}x`)).status, 401);
  const created = await admin('POST', '/admin/clients', { clientId: 'sneaky', allowedGrantTypes: ['client_credentials'] }, 'wrong');
  t.equal(created.status, 401);
  t.equal((await admin('GET', '/admin/clients/sneaky')).status, 404, 'nothing was created');
});

t.test('is not served on the public port', async (t) => {
  const res = await fetch(`${gateway.url}/admin/clients`, { headers: { authorization: `Bearer ${adminToken}` } });
  t.equal(res.status, 404);
});

t.test('refuses bad client JSON with 400 naming the field', async (t) => {
  const res = await admin('POST', '/admin/clients', { clientId: 'bad', allowedGrantTypes: ['pasword'], allowedScopes: ['api1'] });
  t.equal(res.status, 400);
  const body = (await res.json()) as { error: string; problems: { path: string; message: string }[] };
  t.equal(body.error, 'invalid_client_metadata');
  t.same(body.problems, [{ path: 'allowedGrantTypes[0]', message: 'unknown grant type "pasword"' }]);
  const typo = (await (await admin('POST', '/admin/clients', { clientId: 'bad', allowedGrantTypez: [] })).json()) as {
    problems: { path: string }[];
  };
  t.ok(
    typo.problems.some((p) => p.path === 'allowedGrantTypez'),
    'an unknown field is named',
  );
  t.equal((await admin('POST', '/admin/clients', 'not an object')).status, 400);
});

t.test('creates, reads, updates, disables, lists and deletes a client, each change an audit event', async (t) => {
  const created = await admin('POST', '/admin/clients', {
    clientId: 'svc-a',
    clientName: 'Service A',
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['api1'],
  });
  t.equal(created.status, 201);
  const { secret, client } = (await created.json()) as { secret: string; client: Record<string, unknown> };
  t.match(client, { clientId: 'svc-a', source: 'store', enabled: true, clientSecrets: [{ id: String }] });
  t.notMatch(JSON.stringify(client), /value/, 'no secret hash in the answer');
  t.equal(await tokenStatus('svc-a', secret), 200, 'the new client gets tokens (memory store)');
  t.equal((await admin('POST', '/admin/clients', { clientId: 'svc-a', allowedGrantTypes: ['client_credentials'] })).status, 409);
  t.equal((await admin('POST', '/admin/clients', { clientId: 'm2m', allowedGrantTypes: ['client_credentials'] })).status, 409);

  const read = (await (await admin('GET', '/admin/clients/svc-a')).json()) as { client: Record<string, unknown> };
  t.equal(read.client.clientName, 'Service A');
  const configured = (await (await admin('GET', '/admin/clients/m2m')).json()) as { client: Record<string, unknown> };
  t.equal(configured.client.source, 'config');
  t.equal((await admin('PATCH', '/admin/clients/m2m', { enabled: false })).status, 409, 'config file clients are read-only');

  const updated = await admin('PATCH', '/admin/clients/svc-a', { allowedScopes: ['api1', 'api2'] });
  t.equal(updated.status, 200);
  t.same(((await updated.json()) as { client: { allowedScopes: string[] } }).client.allowedScopes, ['api1', 'api2']);
  t.equal((await admin('PATCH', '/admin/clients/svc-a', { allowedScopes: ['nope'] })).status, 400);

  t.equal((await admin('PATCH', '/admin/clients/svc-a', { enabled: false })).status, 200);
  t.equal(await tokenStatus('svc-a', secret), 401, 'disabled: refused at once on this gateway');

  for (const id of ['svc-b', 'svc-c']) {
    await admin('POST', '/admin/clients', { clientId: id, allowedGrantTypes: ['client_credentials'], allowedScopes: ['api1'] });
  }
  const first = (await (await admin('GET', '/admin/clients?limit=2')).json()) as { clients: { clientId: string }[]; next: string };
  t.same(
    first.clients.map((c) => c.clientId),
    ['svc-a', 'svc-b'],
  );
  t.type(first.next, 'string', 'an opaque cursor to the next page');
  const second = (await (await admin('GET', `/admin/clients?limit=2&cursor=${first.next}`)).json()) as {
    clients: { clientId: string }[];
    next: string | null;
  };
  t.same(
    second.clients.map((c) => c.clientId),
    ['svc-c'],
  );
  t.equal(second.next, null);
  t.equal((await admin('GET', '/admin/clients?limit=0')).status, 400);

  t.equal((await admin('DELETE', '/admin/clients/svc-a')).status, 204);
  t.equal((await admin('GET', '/admin/clients/svc-a')).status, 404);
  t.equal((await admin('DELETE', '/admin/clients/svc-a')).status, 404);
  await settle();
  const names = events.filter((e) => e.clientId === 'svc-a' && e.category === 'Configuration').map((e) => e.name);
  t.same(names, ['ClientCreated', 'ClientUpdated', 'ClientUpdated', 'ClientDeleted']);
  t.notMatch(JSON.stringify(events), secret, 'no event holds the secret');
});

t.test('rolls a secret over: add a new one, expire the old one', async (t) => {
  const created = await admin('POST', '/admin/clients', {
    clientId: 'svc-roll',
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['api1'],
  });
  const { secret: old, client } = (await created.json()) as { secret: string; client: { clientSecrets: { id: string }[] } };
  const added = await admin('POST', '/admin/clients/svc-roll/secrets', { description: 'next' });
  t.equal(added.status, 201);
  const { secret: next, secretId } = (await added.json()) as { secret: string; secretId: string };
  t.equal(await tokenStatus('svc-roll', old), 200, 'both work during the roll-over');
  t.equal(await tokenStatus('svc-roll', next), 200);
  const oldId = client.clientSecrets[0]?.id as string;
  t.equal((await admin('POST', `/admin/clients/svc-roll/secrets/${oldId}/expire`)).status, 200);
  t.equal(await tokenStatus('svc-roll', old), 401, 'the old one is refused');
  t.equal(await tokenStatus('svc-roll', next), 200);
  t.equal((await admin('POST', '/admin/clients/svc-roll/secrets/nosuchsecret/expire')).status, 404);
  await settle();
  t.same(
    events.filter((e) => e.clientId === 'svc-roll' && e.category === 'Configuration').map((e) => [e.name, e.details?.secretId ?? null]),
    [
      ['ClientCreated', null],
      ['ClientSecretAdded', secretId],
      ['ClientSecretExpired', oldId],
    ],
  );
});

t.test('tessera clients add, list, show, rotate-secret and disable work over the admin API', async (t) => {
  const env = { TESSERA_ADMIN_URL: managementUrl };
  const add = await runCliInProcess(
    ['clients', 'add', 'cli-svc', '--grant-type', 'client_credentials', '--scope', 'api1', '--token-file', tokenFile],
    { env },
  );
  t.equal(add.code, 0, add.stderr);
  const { secret } = JSON.parse(add.stdout) as { secret: string };
  t.equal(await tokenStatus('cli-svc', secret), 200);

  const withToken = { env: { ...env, TESSERA_ADMIN_TOKEN: adminToken } };
  const list = await runCliInProcess(['clients', 'list'], withToken);
  t.equal(list.code, 0, list.stderr);
  t.match(list.stdout, /^CLIENT_ID\s+ENABLED\s+GRANT_TYPES\s+SCOPES$/m);
  t.match(list.stdout, /^cli-svc\s+true\s+client_credentials\s+api1$/m);

  const show = await runCliInProcess(['clients', 'show', 'cli-svc'], withToken);
  t.equal((JSON.parse(show.stdout) as { client: { clientId: string } }).client.clientId, 'cli-svc');

  const rotate = await runCliInProcess(['clients', 'rotate-secret', 'cli-svc', '--old-expires-in', '0'], withToken);
  t.equal(rotate.code, 0, rotate.stderr);
  const { secret: next } = JSON.parse(rotate.stdout) as { secret: string };
  t.equal(await tokenStatus('cli-svc', secret), 401, 'the old secret is expired');
  t.equal(await tokenStatus('cli-svc', next), 200);

  const disable = await runCliInProcess(['clients', 'disable', 'cli-svc'], withToken);
  t.equal(disable.code, 0, disable.stderr);
  t.equal(await tokenStatus('cli-svc', next), 401);

  const refused = await runCliInProcess(['clients', 'add', 'x', '--grant-type', 'pasword'], withToken);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /400 allowedGrantTypes\[0\]: unknown grant type "pasword"/);
  const noToken = await runCliInProcess(['clients', 'list'], { env });
  t.equal(noToken.code, 2);
});

t.test('on the memory store too, pages walk every client once in clientId order, and the CLI follows them', async (t) => {
  const ids = Array.from({ length: 45 }, (_, i) => `page-${String(i * 7919).padStart(6, '0')}`);
  for (const clientId of ids) {
    const res = await admin('POST', '/admin/clients', { clientId, allowedGrantTypes: ['client_credentials'], allowedScopes: ['api1'] });
    t.equal(res.status, 201);
  }
  const walk = async (limit: number): Promise<string[]> => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = (await (await admin('GET', `/admin/clients?limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`)).json()) as {
        clients: { clientId: string }[];
        next: string | null;
      };
      seen.push(...page.clients.map((c) => c.clientId));
      cursor = page.next;
    } while (cursor !== null);
    return seen;
  };
  const all = await walk(1000);
  t.same(
    all.filter((id) => id.startsWith('page-')),
    [...ids].sort(),
  );
  t.same(await walk(7), all, 'limit 7 walks the same clients once each');
  const cli = await runCliInProcess(['clients', 'list', '--all', '--limit', '4', '--url', managementUrl, '--token-file', tokenFile]);
  t.equal(cli.code, 0, cli.stderr);
  t.same(
    cli.stdout
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((l) => l.split(/\s+/)[0]),
    all,
  );
  const bad = (await (await admin('GET', '/admin/clients?limit=5000')).json()) as { error: string; error_description: string };
  t.same(bad, { error: 'invalid_request', error_description: 'limit must be a whole number from 1 to 1000' });
  const nul = await admin('POST', '/admin/clients', { clientId: 'a\u0000b', allowedGrantTypes: ['client_credentials'] });
  t.equal(nul.status, 400, 'a client id with U+0000 cannot be listed: refused');
});

t.test("every admin event in the sink carries the caller's address (issue 33)", async (t) => {
  t.equal((await admin('POST', '/admin/clients', { clientId: 'svc-addr', allowedGrantTypes: ['client_credentials'] })).status, 201);
  t.equal((await admin('DELETE', '/admin/clients/svc-addr')).status, 204);
  // The file sink writes in batches: wait for the delete's line.
  const deadline = Date.now() + 5000;
  let fromFile: AuditEvent[] = [];
  for (;;) {
    fromFile = readFileSync(eventFile, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as AuditEvent);
    if (fromFile.some((e) => e.name === 'ClientDeleted' && e.clientId === 'svc-addr') || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const adminEvents = fromFile.filter((e) => e.endpoint === 'admin');
  t.ok(adminEvents.some((e) => e.name === 'ClientCreated' && e.clientId === 'svc-addr'));
  t.ok(adminEvents.some((e) => e.name === 'ClientDeleted' && e.clientId === 'svc-addr'));
  t.same(
    adminEvents.filter((e) => e.remoteAddress !== '127.0.0.1').map((e) => `${e.name} ${e.clientId}`),
    [],
    'ClientCreated, ClientUpdated, ClientDeleted, ClientSecretAdded and ClientSecretExpired: each with the address',
  );
});
