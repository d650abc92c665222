/**
 * A family's listing on Redis Cluster (docs/storage.md, "Redis key layout"): the listing, the
 * members set and the records share the family's hash tag, so the scripts that read and write
 * them together (`tesseraListPage` reads the records its names point to, `tesseraListIfLive`,
 * `tesseraWrite`, `tesseraDeleteMember`) run in one slot, and `SSCAN` goes to that slot's master.
 */
import t from 'tap';
import { hashHandle } from '../../../core/store/handle.js';
import { RedisStore } from '../../../core/store/redis_store.js';
import type { StoreKey } from '../../../core/store/store.js';
import { startRedisCluster } from '../../helpers/redis_cluster.js';
import { newFamily } from './store_conformance.js';

const setup = await startRedisCluster();
if (setup === null) {
  t.comment('no redis-server on the PATH: the listing on a Cluster is not tested');
} else {
  t.teardown(() => setup.stop());
  const store = new RedisStore({ nodes: setup.nodes, commandTimeoutMs: 5000 });
  t.teardown(() => store.close());
  const key = (family: string, name: string, named = true): StoreKey => ({
    kind: 'client',
    id: hashHandle(name),
    family,
    ...(named ? { name } : {}),
  });

  t.test('listFamily, scanFamily and listRecords on a Cluster', async (t) => {
    const family = newFamily();
    const names = Array.from({ length: 300 }, (_, i) => `c-${String(i).padStart(3, '0')}`);
    for (const name of names.slice(0, 200)) await store.set(key(family, name), { n: name }, 60_000);
    for (const name of names.slice(200)) await store.set(key(family, name, false), { n: name }, 60_000);
    t.equal(await store.delete(key(family, 'c-010')), true);
    const walk = async (limit: number): Promise<string[]> => {
      const seen: string[] = [];
      let after: string | undefined;
      do {
        const page = await store.listFamily<{ n: string }>(family, after, limit);
        seen.push(...page.records.map((r) => r.name));
        after = page.next ?? undefined;
      } while (after !== undefined);
      return seen;
    };
    t.same(
      await walk(7),
      names.slice(0, 200).filter((n) => n !== 'c-010'),
      'the named records, in order, the deleted one gone',
    );
    const keys: StoreKey[] = [];
    let cursor: string | undefined;
    do {
      const scan = await store.scanFamily<{ n: string }>(family, 'client', cursor, 50);
      keys.push(...scan.records.map((r) => key(family, r.n)));
      cursor = scan.cursor ?? undefined;
    } while (cursor !== undefined);
    t.equal(await store.listRecords(keys), 299);
    t.same(
      await walk(1000),
      names.filter((n) => n !== 'c-010'),
      'every live record listed',
    );
  });
}
