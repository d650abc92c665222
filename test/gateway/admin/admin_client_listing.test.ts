/**
 * The admin API's client listing at scale, on a real Redis over real HTTP (docs/operations.md,
 * "Admin API", "Listing"): clients written straight into the store, 500 of them as the version
 * before the listing wrote them (no listing entry), are all listed once the gateway has migrated
 * them at start; walked with limit 1000 and limit 7 every id comes once, in `clientId` order; bad
 * `limit` and `cursor` values are `400 invalid_request` naming the parameter; `tessera clients list`
 * follows the cursor; a page of 10 among 10,000 clients reads about 10 records (MONITOR); a walk
 * while clients are added and deleted lists every client that stays exactly once.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import pino from 'pino';
import t from 'tap';
import { RedisStore } from '../../../core/store/redis_store.js';
import type { StoreKey } from '../../../core/store/store.js';
import type { ClientConfig } from '../../../core/worker_config.js';
import { checkClientDocument } from '../../../gateway/admin/client_document.js';
import { storedClientKey, storedClientRecord, storedClientTtlMs } from '../../../gateway/client_registry/client_registry.js';
import { validateConfig } from '../../../gateway/config/load.js';
import { runCliInProcess } from '../../helpers/cli_in_process.js';
import { monitorRedis, startRedisServer } from '../../helpers/redis_server.js';
import { baseTestConfig, sha256Secret, startTestGateway } from '../../helpers/test_gateway.js';

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning !== null) t.comment(redis.warning);
const keyPrefix = `tessera-listing-${process.pid}:`;
const store = new RedisStore({ url: redis.url, keyPrefix, commandTimeoutMs: 5000 });
t.teardown(() => store.close());

const adminToken = 'admin-token-for-the-listing-test-0123456789';
const dir = t.testdir();
const tokenFile = path.join(dir, 'admin.token');
writeFileSync(tokenFile, adminToken);

// One client checked as the admin API checks one; the others differ in id and secret hash.
const checked = checkClientDocument(
  {
    clientId: 'template',
    clientSecrets: [{ value: sha256Secret('s') }],
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['api1'],
  },
  validateConfig(baseTestConfig(), { configDir: dir, env: {} }),
  [],
);
if (!checked.ok) throw new Error(JSON.stringify(checked.problems));
const template = checked.client;
const configOf = (clientId: string): ClientConfig => ({ ...template, clientId });

/** The key the version before the listing wrote: the same record, no listing name. */
function unlistedKey(clientId: string): StoreKey {
  const { name: _name, ...key } = storedClientKey(clientId);
  return key;
}

/** Writes the clients pipelined, `inFlight` calls at a time. */
async function writeClients(ids: readonly string[], keyOf: (id: string) => StoreKey = storedClientKey): Promise<void> {
  const now = Date.now();
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < ids.length) {
      const id = ids[next++] as string;
      await store.set(keyOf(id), storedClientRecord(configOf(id), now), storedClientTtlMs);
    }
  };
  await Promise.all(Array.from({ length: 64 }, lane));
}

const byBytes = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));
// Ids of different lengths and a non-ASCII one, so that order is more than zero-padded numbers.
const idOf = (i: number): string => (i % 97 === 0 ? `é-${i}` : `client-${i % 3 === 0 ? i : `x${i}`}`);
const firstIds = Array.from({ length: 2500 }, (_, i) => idOf(i));
await writeClients(firstIds.slice(500));
await writeClients(firstIds.slice(0, 500), unlistedKey);

const logs: { msg: string; seen?: number }[] = [];
const gateway = await startTestGateway(t, {
  patch: (raw) => {
    raw.store = { type: 'redis', url: redis.url, keyPrefix };
    raw.clientRegistry = { store: true };
    raw.admin = { tokenFile };
  },
  logger: pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line) as (typeof logs)[number]) }),
});
const managementUrl = gateway.managementUrl as string;

interface Page {
  clients: { clientId: string }[];
  next: string | null;
}

async function admin(query: string): Promise<Response> {
  return await fetch(`${managementUrl}/admin/clients${query}`, { headers: { authorization: `Bearer ${adminToken}` } });
}

/** Walks every page: the ids in the order they came, and the pages. */
async function walk(limit: number, between?: (page: number) => Promise<void>): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    let res = await admin(`?limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`);
    // A page the store could not answer in its bound (a loaded machine) is 503 + Retry-After: a
    // client asks for the same page again, as this walk does, a few times.
    for (let retry = 0; res.status === 503 && retry < 5; retry++) {
      await res.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, 200));
      res = await admin(`?limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`);
    }
    if (res.status !== 200) throw new Error(`page ${pages}: ${res.status} ${await res.text()}`);
    const page = (await res.json()) as Page;
    if (page.clients.length > limit) throw new Error('a page over its limit');
    ids.push(...page.clients.map((c) => c.clientId));
    cursor = page.next;
    pages += 1;
    await between?.(pages);
  } while (cursor !== null);
  return { ids, pages };
}

t.test('the clients an older version wrote are listed after the first start, with progress lines', async (t) => {
  const until = Date.now() + 60_000;
  while (!logs.some((l) => l.msg.includes('store-kept clients listed in')) && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  t.ok(
    logs.some((l) => l.msg.startsWith('client listing: listing the store-kept clients written before it')),
    'a line says the listing is being migrated',
  );
  const done = logs.find((l) => l.msg.includes('store-kept clients listed in'));
  t.equal(done?.seen, 2500, `the migration read every stored client (${done?.msg})`);
});

t.test('walked with limit 1000 and limit 7, every id comes exactly once, in clientId order', async (t) => {
  const expected = [...firstIds].sort(byBytes);
  const big = await walk(1000);
  t.equal(big.pages, 3);
  t.same(big.ids, expected, 'limit 1000: every id once, in order');
  const small = await walk(7);
  t.equal(small.pages, Math.ceil(2500 / 7));
  t.equal(new Set(small.ids).size, 2500);
  t.same(small.ids, expected, 'limit 7: every id once, in order');
  const first = (await (await admin('')).json()) as Page;
  t.equal(first.clients.length, 100, 'the default page is 100');
  const after = (await (await admin(`?limit=3&after=${encodeURIComponent(expected[10] as string)}`)).json()) as Page;
  t.same(
    after.clients.map((c) => c.clientId),
    expected.slice(11, 14),
    'after=ID starts after that client id',
  );
});

t.test('a bad limit or cursor is 400 invalid_request naming the parameter', async (t) => {
  for (const query of ['?limit=0', '?limit=1001', '?limit=abc', '?limit=1.5', '?limit=', '?limit=-1', '?limit=1e2']) {
    const res = await admin(query);
    t.equal(res.status, 400, query);
    const body = (await res.json()) as { error: string; error_description: string };
    t.equal(body.error, 'invalid_request', query);
    t.match(body.error_description, /^limit must be a whole number from 1 to 1000/, query);
  }
  for (const query of ['?cursor=abc', '?cursor=%25%25', `?cursor=${Buffer.from('x1:client-1').toString('base64url')}`, '?cursor=']) {
    const res = await admin(query);
    t.equal(res.status, 400, query);
    const body = (await res.json()) as { error: string; error_description: string };
    t.equal(body.error, 'invalid_request', query);
    t.match(body.error_description, /^cursor /, query);
  }
  const both = await admin('?cursor=abc&after=x');
  t.equal(both.status, 400);
  t.match(((await both.json()) as { error_description: string }).error_description, /cursor or after/);
});

t.test('tessera clients list follows the cursor with --all, and names the next page without it', async (t) => {
  const connection = ['--url', managementUrl, '--token-file', tokenFile];
  const all = await runCliInProcess(['clients', 'list', '--all', '--limit', '333', ...connection]);
  t.equal(all.code, 0, all.stderr);
  const lines = all.stdout.trimEnd().split('\n');
  t.match(lines[0], /^CLIENT_ID\s+ENABLED\s+GRANT_TYPES\s+SCOPES$/);
  t.same(
    lines.slice(1).map((l) => l.split(/\s+/)[0]),
    [...firstIds].sort(byBytes),
    'every client once, in order, over 8 pages',
  );
  const one = await runCliInProcess(['clients', 'list', '--limit', '2', ...connection]);
  t.equal(one.code, 0, one.stderr);
  t.equal(one.stdout.trimEnd().split('\n').length, 3, 'a header and one page');
  const more = /^more: tessera clients list --limit 2 --cursor (\S+)$/m.exec(one.stderr);
  t.ok(more, `the next page's command on stderr: ${one.stderr}`);
  const next = await runCliInProcess(['clients', 'list', '--limit', '2', '--cursor', more?.[1] as string, ...connection]);
  t.same(
    next.stdout
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((l) => l.split(/\s+/)[0]),
    [...firstIds].sort(byBytes).slice(2, 4),
  );
  const bad = await runCliInProcess(['clients', 'list', '--cursor', 'nonsense', ...connection]);
  t.not(bad.code, 0);
  t.match(bad.stderr, /400 cursor is not one this API gave/);
});

t.test('a page of 10 among 10,000 clients reads about 10 records, not 10,000 (MONITOR)', async (t) => {
  const more = Array.from({ length: 7500 }, (_, i) => `more-${i}`);
  await writeClients(more);
  const all = [...firstIds, ...more].sort(byBytes);
  const middle = (await (await admin(`?limit=10&after=${encodeURIComponent(all[5000] as string)}`)).json()) as Page;
  t.same(
    middle.clients.map((c) => c.clientId),
    all.slice(5001, 5011),
  );
  const commands: string[][] = [];
  const watching = await monitorRedis(redis.port, (args) => commands.push(args));
  t.teardown(() => watching.stop());
  // MONITOR shows what a script runs; a marker command tells when the page's commands are all in.
  const raw = new Redis(redis.url);
  t.teardown(() => raw.disconnect());
  await raw.echo('before');
  const res = await admin(`?limit=10&cursor=${middle.next as string}`);
  const page = (await res.json()) as Page;
  await raw.echo('after');
  const until = Date.now() + 10_000;
  while (!commands.some((c) => c[0]?.toLowerCase() === 'echo' && c[1] === 'after') && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  watching.stop();
  t.same(
    page.clients.map((c) => c.clientId),
    all.slice(5011, 5021),
    'the next 10',
  );
  const from = commands.findIndex((c) => c[1] === 'before');
  const to = commands.findIndex((c) => c[1] === 'after');
  const during = commands.slice(from + 1, to).filter((c) => c.slice(1).some((a) => String(a).includes('{clients}')));
  const names = during.map((c) => (c[0] as string).toLowerCase());
  const gets = names.filter((n) => n === 'get').length;
  t.comment(`commands of one page among 10,000 clients: ${names.join(' ')}`);
  t.ok(gets >= 10 && gets <= 11, `${gets} record reads for a page of 10`);
  t.ok(during.length <= 16, `${during.length} commands on the clients' keys in all`);
  t.notOk(
    names.some((n) => n === 'smembers' || n === 'mget' || n === 'sscan'),
    'the family is not read whole',
  );
});

t.test('a walk while clients are added and deleted lists every client that stays, exactly once, in order', async (t) => {
  const before = (await walk(1000)).ids;
  const deleted = new Set(before.filter((_, i) => i % 50 === 7));
  const added: string[] = [];
  const { ids } = await walk(250, async (page) => {
    // Between pages: delete clients on either side of the walk, add some on either side.
    for (const id of [...deleted].slice((page - 1) * 4, page * 4)) await store.delete(storedClientKey(id));
    const fresh = [`aaa-${page}`, `zzz-${page}`, `client-5-${page}`];
    added.push(...fresh);
    await writeClients(fresh);
  });
  const stayed = before.filter((id) => !deleted.has(id));
  const seen = new Map<string, number>();
  for (const id of ids) seen.set(id, (seen.get(id) ?? 0) + 1);
  t.ok(
    stayed.every((id) => seen.get(id) === 1),
    'every client there throughout the walk came exactly once',
  );
  t.ok(
    [...seen.values()].every((n) => n === 1),
    'nothing came twice',
  );
  t.same(ids, [...ids].sort(byBytes), 'in clientId order');
  t.ok(ids.includes(`zzz-1`) && !ids.includes(`aaa-1`), 'a client added past the walk shows, one added before it does not');
});
