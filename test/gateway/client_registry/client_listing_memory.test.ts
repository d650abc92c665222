/**
 * The client registry's listing on the memory store (docs/operations.md, "Admin API", "Listing"):
 * a page costs about its size in record reads however many clients are stored, and clients written
 * before the listing existed (no listing name) are listed by the registry's first start, once.
 */
import pino from 'pino';
import t from 'tap';
import { MemoryStore } from '../../../core/store/memory_store.js';
import { StoreUnavailableError, type StoreKey } from '../../../core/store/store.js';
import type { ClientConfig } from '../../../core/worker_config.js';
import {
  ClientRegistry,
  storedClientKey,
  storedClientRecord,
  storedClientTtlMs,
} from '../../../gateway/client_registry/client_registry.js';
import { clientSchema } from '../../../gateway/config/schema.js';

const config = (clientId: string): ClientConfig =>
  ({ clientId, clientSecrets: [], allowedGrantTypes: ['client_credentials'], allowedScopes: ['api1'] }) as unknown as ClientConfig;

function registryOver(store: MemoryStore): ClientRegistry {
  const registry = new ClientRegistry(store, {
    cacheSize: 100,
    negativeCacheSize: 100,
    cacheTtlMs: 60_000,
    pollIntervalMs: 60_000,
    logger: pino({ level: 'silent' }),
  });
  t.teardown(() => registry.stop());
  return registry;
}

async function write(store: MemoryStore, ids: readonly string[], keyOf: (id: string) => StoreKey = storedClientKey): Promise<void> {
  for (const id of ids) await store.set(keyOf(id), storedClientRecord(config(id), 0), storedClientTtlMs);
}

const idsOf = (n: number, prefix = 'c'): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(5, '0')}`);

t.test('a page of 10 reads about 10 records with 100 clients stored and with 10,000', async (t) => {
  const costs: number[] = [];
  for (const n of [100, 10_000]) {
    const store = new MemoryStore();
    t.teardown(() => store.close());
    const registry = registryOver(store);
    const ids = idsOf(n);
    await write(store, ids);
    const before = store.listingReads;
    const page = await registry.list(ids[n / 2], 10);
    costs.push(store.listingReads - before);
    t.same(
      page.clients.map((c) => c.config.clientId),
      ids.slice(n / 2 + 1, n / 2 + 11),
    );
    t.equal(page.next, ids[n / 2 + 10]);
  }
  t.ok(
    costs.every((c) => c <= 11),
    `records read for a page of 10: ${costs.join(' and ')}`,
  );
});

t.test("the registry's first start lists the clients written without a listing name, once", async (t) => {
  const store = new MemoryStore();
  t.teardown(() => store.close());
  const listed = idsOf(200, 'new');
  const unlisted = idsOf(300, 'old');
  await write(store, listed);
  await write(store, unlisted, (id) => {
    const { name: _name, ...key } = storedClientKey(id);
    return key;
  });
  const before = registryOver(store);
  t.same((await before.list(undefined, 1000)).clients.length, 200, 'before the migration only the clients written with a name');
  await before.start();
  t.equal(await before.listingBackfill, 500, 'every live client listed (those listed already count again)');
  t.same(
    (await before.list(undefined, 1000)).clients.map((c) => c.config.clientId),
    [...listed, ...unlisted],
  );
  const again = registryOver(store);
  await again.start();
  t.equal(await again.listingBackfill, null, 'a later start does not walk again');
});

t.test('the migration waits out a store that answers unavailable and resumes from its batch', async (t) => {
  const store = new MemoryStore();
  t.teardown(() => store.close());
  const unlisted = idsOf(2500, 'old');
  await write(store, unlisted, (id) => {
    const { name: _name, ...key } = storedClientKey(id);
    return key;
  });
  // The first scan and the first listing fail as a stalled Redis would: each is tried again (the
  // memory store scans the family in one step).
  const failures = { scanFamily: [1], listRecords: [1] };
  const calls = { scanFamily: 0, listRecords: 0 };
  for (const method of ['scanFamily', 'listRecords'] as const) {
    const real = store[method].bind(store) as (...args: unknown[]) => Promise<unknown>;
    (store as unknown as Record<string, unknown>)[method] = async (...args: unknown[]): Promise<unknown> => {
      calls[method] += 1;
      if (failures[method].includes(calls[method])) throw new StoreUnavailableError('stalled (test)');
      return await real(...args);
    };
  }
  const logs: string[] = [];
  const registry = new ClientRegistry(store, {
    cacheSize: 100,
    negativeCacheSize: 100,
    cacheTtlMs: 60_000,
    pollIntervalMs: 60_000,
    logger: pino({ level: 'info' }, { write: (line: string) => void logs.push((JSON.parse(line) as { msg: string }).msg) }),
    listingRetryDelayMs: 10,
  });
  t.teardown(() => registry.stop());
  // The walk's waits do not keep a process alive (a gateway's listeners do): this test holds it.
  const alive = setInterval(() => {}, 1000);
  t.teardown(() => clearInterval(alive));
  await registry.start();
  t.equal(await registry.listingBackfill, 2500, 'every client listed despite two failed steps');
  t.same(calls, { scanFamily: 2, listRecords: 2 }, 'each failed step tried once more');
  t.equal(logs.filter((m) => m.includes('trying again')).length, 2, `one line per failed step: ${JSON.stringify(logs)}`);
  t.equal((await registry.list(undefined, 1000)).clients.length, 1000);
});

const spaConfig = (clientId: string, origins: string[]): ClientConfig =>
  clientSchema.parse({
    clientId,
    requireClientSecret: false,
    allowedGrantTypes: ['client_credentials'],
    allowedScopes: ['api1'],
    allowedCorsOrigins: origins,
  }) as ClientConfig;

t.test("the migration also writes the CORS origin index of an older version's clients", async (t) => {
  const store = new MemoryStore();
  t.teardown(() => store.close());
  const { name: _name, ...oldKey } = storedClientKey('spa-old');
  await store.set(oldKey, storedClientRecord(spaConfig('spa-old', ['https://old.example']), 0), storedClientTtlMs);
  const registry = registryOver(store);
  t.equal(await registry.origins.lookup('https://old.example'), false, 'an older version wrote no index entry');
  registry.invalidate();
  await registry.start();
  t.equal(await registry.listingBackfill, 1);
  t.equal(await registry.origins.lookup('https://old.example'), true, 'indexed by the migration');
});

t.test('an origin index entry its client no longer backs allows nothing', async (t) => {
  const store = new MemoryStore();
  t.teardown(() => store.close());
  const registry = registryOver(store);
  await registry.write(spaConfig('spa-1', ['https://spa.example']));
  t.equal(await registry.origins.lookup('https://spa.example'), true);
  // The client went without its index entry (a crash between the two writes, a failed delete).
  await store.delete(storedClientKey('spa-1'));
  registry.invalidate();
  t.equal(await registry.origins.lookup('https://spa.example'), false, 'the entry names a client that is gone');
  await store.set(storedClientKey('spa-1'), storedClientRecord(spaConfig('spa-1', ['https://else.example']), 0), storedClientTtlMs);
  registry.invalidate();
  t.equal(await registry.origins.lookup('https://spa.example'), false, 'the client no longer lists the origin');
});
