/**
 * Store-kept API resources changed through the admin API by many requests at once (docs/operations.md,
 * "Admin API", "Concurrent changes"), on the memory store and on a real Redis: two admin APIs (two
 * gateways' `registerAdminRoutes`, each with its own registries) over one store, over real HTTP.
 * Changes of one resource at once are all kept (scope lists and secret expirations, secrets
 * added); a change racing a DELETE never brings the resource back; of creations of one name at
 * once exactly one is 201; a resource that changes before every try answers 409 and nothing of the
 * change is written. The memory store answers within the calling tick, so there each call waits a
 * random 0-3 ms first, as a store across a network does, for requests to interleave.
 */
import { createHash } from 'node:crypto';
import pino from 'pino';
import t, { type Test } from 'tap';
import * as uWS from 'uWebSockets.js';
import { MemoryStore } from '../../../core/store/memory_store.js';
import { RedisStore } from '../../../core/store/redis_store.js';
import type { Replacement, Store, StoreKey } from '../../../core/store/store.js';
import { registerAdminRoutes } from '../../../gateway/admin/admin_api.js';
import { ApiResourceRegistry, type StoredApiResourceRecord } from '../../../gateway/client_registry/api_resource_registry.js';
import { ClientRegistry } from '../../../gateway/client_registry/client_registry.js';
import { validateConfig } from '../../../gateway/config/load.js';
import { ApiResourceCell } from '../../../wire/api_resource_cell.js';
import { startRedisServer } from '../../helpers/redis_server.js';
import { baseTestConfig, sha256Secret } from '../../helpers/test_gateway.js';

const redis = await startRedisServer();
t.teardown(() => redis.stop());
if (redis.warning) t.comment(redis.warning);

const adminToken = 'admin-token-for-the-resources-concurrency-test';
const logger = pino({ level: 'silent' });
const config = validateConfig(baseTestConfig(), { configDir: t.testdir(), env: {} });
const family = 'api-resources';

/** `store` with every call made a random 0-3 ms later: the memory store's calls then interleave as a remote store's do. */
function slowed(store: Store): Store {
  return new Proxy(store, {
    get: (target, name) => {
      const value: unknown = Reflect.get(target, name);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]): Promise<unknown> => {
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
        // The store's methods use its private fields: called on the store, not on the proxy.
        return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
      };
    },
  });
}

/** `store`, where another writer adds a secret to the record just before every compare-and-set. */
function contended(store: Store): Store {
  let rewrites = 0;
  const replaceIfUnchanged = async <T>(key: StoreKey, expected: T, next: T | null, ttlMs: number): Promise<Replacement<T>> => {
    const current = await store.get<StoredApiResourceRecord>(key);
    if (current !== null) {
      rewrites += 1;
      const secrets = [...current.resource.secrets, { value: sha256Secret(`other writer ${rewrites}`) }];
      await store.set(key, { ...current, resource: { ...current.resource, secrets } }, ttlMs);
    }
    return store.replaceIfUnchanged(key, expected, next, ttlMs);
  };
  return new Proxy(store, {
    get: (target, name) => {
      if (name === 'replaceIfUnchanged') return replaceIfUnchanged;
      const value: unknown = Reflect.get(target, name);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** An admin API over `store` on a free port, as a gateway's management listener serves it; its base URL. */
async function startAdmin(t: Test, store: Store): Promise<string> {
  const apiResources = new ApiResourceRegistry(store, { pollIntervalMs: 250, cell: ApiResourceCell.create(), logger });
  await apiResources.start();
  t.teardown(() => apiResources.stop());
  const registry = new ClientRegistry(store, { cacheSize: 10, negativeCacheSize: 10, cacheTtlMs: 1000, pollIntervalMs: 60_000, logger });
  const app = uWS.App();
  registerAdminRoutes(app, {
    registry,
    apiResources,
    config: () => config,
    grantTypes: () => [],
    token: adminToken,
    emit: () => {},
    logger,
  });
  const socket = await new Promise<uWS.us_listen_socket>((resolve, reject) =>
    app.listen('127.0.0.1', 0, (listening) => (listening === false ? reject(new Error('cannot listen')) : resolve(listening))),
  );
  t.teardown(() => uWS.us_listen_socket_close(socket));
  return `http://127.0.0.1:${uWS.us_socket_local_port(socket as unknown as uWS.us_socket)}`;
}

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown> | undefined;
}

async function admin(base: string, method: string, route: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${base}/admin/api-resources${route}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>) };
}

interface ResourceView {
  readonly name: string;
  readonly scopes: readonly string[];
  readonly secrets: readonly { readonly id: string; readonly expiration?: string }[];
}

const viewOf = (answer: Answer): ResourceView | undefined => answer.body?.apiResource as ResourceView | undefined;
/** The admin API's id of a secret (client_document.ts `secretId`): the start of its SHA-256. */
const idOf = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('base64url').slice(0, 12);
const statuses = (answers: readonly Answer[]): string => JSON.stringify(answers.map((answer) => answer.status));

const stores: Readonly<Record<string, (t: Test) => Store>> = {
  memory: () => slowed(new MemoryStore()),
  redis: (t) => {
    const store = new RedisStore({ url: redis.url, keyPrefix: `resources-concurrency-${process.pid}:`, commandTimeoutMs: 5000 });
    t.teardown(() => store.close());
    return store;
  },
};

for (const [kind, connect] of Object.entries(stores)) {
  t.test(kind, async (t) => {
    // Two gateways over one store: one memory store, or one Redis through two connections.
    const shared = connect(t);
    const [a, b] = await Promise.all([startAdmin(t, shared), startAdmin(t, kind === 'memory' ? shared : connect(t))]);
    const on = (i: number): string => (i % 2 === 0 ? a : b);

    t.test('10 scope lists and 10 secret expirations at once on two gateways: every one is kept', async (t) => {
      const secrets = Array.from({ length: 10 }, (_, k) => `first secret ${k}`);
      const created = await admin(a, 'POST', '', {
        name: 'urn:patched',
        scopes: ['api1'],
        secrets: secrets.map((s) => ({ value: sha256Secret(s) })),
      });
      t.equal(created.status, 201);
      const expirations = secrets.map((_, k) => `2030-01-${String(k + 1).padStart(2, '0')}T00:00:00.000Z`);
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => {
          const k = i >> 1;
          return i % 2 === 0
            ? admin(on(k), 'PATCH', '/urn:patched', { scopes: [`patched.${k}`, 'api1'] })
            : admin(on(k + 1), 'POST', `/urn:patched/secrets/${idOf(secrets[k] as string)}/expire`, { expiration: expirations[k] });
        }),
      );
      t.same(
        answers.filter((answer) => answer.status !== 200),
        [],
        `all 200: ${statuses(answers)}`,
      );
      const stored = viewOf(await admin(b, 'GET', '/urn:patched'));
      t.same(
        stored?.secrets.map((s) => s.expiration),
        expirations,
        'every expiration kept, on the secret it named',
      );
      const patched = Array.from({ length: 10 }, (_, k) => JSON.stringify([`patched.${k}`, 'api1']));
      t.ok(patched.includes(JSON.stringify(stored?.scopes)), `the scopes are one PATCH's: ${JSON.stringify(stored?.scopes)}`);
    });

    t.test('20 secrets added to one resource at once on two gateways: all 20 kept', async (t) => {
      const created = await admin(a, 'POST', '', { name: 'urn:rolled', scopes: ['api1'] });
      t.equal(created.status, 201);
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => admin(on(i), 'POST', '/urn:rolled/secrets')));
      t.same(
        answers.map((answer) => answer.status),
        answers.map(() => 201),
        'all 201',
      );
      const added = answers.map((answer) => answer.body as { secret: string; secretId: string });
      t.same(
        added.filter((secret) => idOf(secret.secret) !== secret.secretId),
        [],
        'each answer names the secret it gives',
      );
      const stored = new Set(viewOf(await admin(b, 'GET', '/urn:rolled'))?.secrets.map((s) => s.id));
      t.same(
        added.filter((secret) => !stored.has(secret.secretId)).map((secret) => secret.secretId),
        [],
        'every added secret is stored',
      );
      t.ok(stored.has(idOf(created.body?.secret as string)), 'and the first');
      t.equal(stored.size, 21);
    });

    t.test('PATCHes and secret changes racing a DELETE: the resource stays deleted, each answer 2xx or 404', async (t) => {
      for (let round = 0; round < 5; round += 1) {
        const name = `urn:deleted-${round}`;
        const created = await admin(a, 'POST', '', { name, scopes: ['api1'] });
        t.equal(created.status, 201);
        const firstId = idOf(created.body?.secret as string);
        // The DELETE starts among the changes, on either gateway, so that some of them read the
        // resource before it went and write after.
        const changes = Array.from({ length: 10 }, (_, i) =>
          i % 3 === 0
            ? admin(on(i), 'POST', `/${name}/secrets`)
            : i % 3 === 1
              ? admin(on(i), 'POST', `/${name}/secrets/${firstId}/expire`, { expiration: `2031-01-0${1 + (i % 9)}T00:00:00Z` })
              : admin(on(i), 'PATCH', `/${name}`, { scopes: [`round.${i}`] }),
        );
        const deleted = admin(on(round + 1), 'DELETE', `/${name}`);
        const more = Array.from({ length: 10 }, (_, i) => admin(on(i + 1), 'PATCH', `/${name}`, { scopes: [`late.${i}`] }));
        const answers = await Promise.all([...changes, ...more]);
        t.equal((await deleted).status, 204, `round ${round}: deleted`);
        t.same(
          answers.filter((answer) => ![200, 201, 404].includes(answer.status)).map((answer) => answer.status),
          [],
          `round ${round}: every change 200/201 or 404: ${statuses(answers)}`,
        );
        t.equal((await admin(a, 'GET', `/${name}`)).status, 404, `round ${round}: still deleted on A`);
        t.equal((await admin(b, 'GET', `/${name}`)).status, 404, `round ${round}: and on B`);
        const loaded = await shared.familyRecords<StoredApiResourceRecord>(family, 'client');
        t.notOk(
          loaded.some((record) => record.resource.name === name),
          `round ${round}: not among the records every gateway loads`,
        );
        t.equal((await admin(b, 'PATCH', `/${name}`, { scopes: ['later'] })).status, 404, `round ${round}: a later PATCH is 404`);
        t.equal((await admin(a, 'GET', `/${name}`)).status, 404, `round ${round}: and does not bring it back`);
      }
    });

    t.test('one name created 20 times at once on two gateways: one 201, nineteen 409, and its secret is the one stored', async (t) => {
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => admin(on(i), 'POST', '', { name: 'urn:contested', scopes: ['api1'] })),
      );
      const created = answers.filter((answer) => answer.status === 201);
      t.equal(created.length, 1, `one creation: ${statuses(answers)}`);
      t.equal(answers.filter((answer) => answer.status === 409).length, 19, 'every other one 409');
      const stored = viewOf(await admin(b, 'GET', '/urn:contested'));
      t.same(
        stored?.secrets.map((s) => s.id),
        [idOf(created[0]?.body?.secret as string)],
        "the 201's secret, and only it",
      );
    });

    t.test(
      'a resource that changes before every try: a PATCH and a secret change answer 409 and write nothing; DELETE still deletes',
      async (t) => {
        const busy = await startAdmin(t, contended(shared));
        t.equal((await admin(a, 'POST', '', { name: 'urn:busy', scopes: ['api1'] })).status, 201);
        const patched = await admin(busy, 'PATCH', '/urn:busy', { scopes: ['mine'] });
        t.equal(patched.status, 409);
        t.equal(patched.body?.error, 'conflict');
        const added = await admin(busy, 'POST', '/urn:busy/secrets');
        t.equal(added.status, 409);
        const stored = viewOf(await admin(a, 'GET', '/urn:busy'));
        t.same(stored?.scopes, ['api1'], 'the scopes as before');
        t.equal(stored?.secrets.length, 1 + 2 * 32, "the other writer's 32 secrets for each change, none of the admin's");
        t.equal((await admin(busy, 'DELETE', '/urn:busy')).status, 204);
        t.equal((await admin(a, 'GET', '/urn:busy')).status, 404);
      },
    );
  });
}
