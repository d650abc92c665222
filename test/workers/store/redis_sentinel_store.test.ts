import t from 'tap';
import { RedisStore, parseSentinelAddress } from '../../../workers/store/redis_store.js';
import { StoreUnavailableError } from '../../../workers/store/store.js';
import { startRedisSentinel } from '../../helpers/redis_sentinel.js';
import { newId, runStoreConformance } from './store_conformance.js';

const setup = await startRedisSentinel();
if (setup === null) {
  t.comment('no redis-server on the PATH: the Sentinel store is not tested');
} else {
  t.teardown(() => setup.stop());
  const sentinels = setup;
  let prefixCount = 0;
  const newPrefix = (): string => `sentinel${process.pid}-${(prefixCount += 1)}:`;
  const openStore = (commandTimeoutMs = 500): RedisStore =>
    new RedisStore({ sentinels: sentinels.sentinels, name: sentinels.name, keyPrefix: newPrefix(), commandTimeoutMs });

  t.test('the store conformance suite, on the master the Sentinels name', async (t) => {
    runStoreConformance(t, () => openStore());
  });

  t.test('an unknown master group is unavailable, not a crash', async (t) => {
    const store = new RedisStore({ sentinels: sentinels.sentinels, name: 'no-such-group', commandTimeoutMs: 300 });
    t.teardown(() => store.close());
    await t.rejects(store.checkReady(), StoreUnavailableError);
  });

  t.test('Sentinel addresses are host:port', async (t) => {
    t.same(parseSentinelAddress('sentinel-1:26379'), { host: 'sentinel-1', port: 26379 });
    t.same(parseSentinelAddress('[::1]:26379'), { host: '::1', port: 26379 });
    t.throws(() => parseSentinelAddress('sentinel-1'));
    t.throws(() => parseSentinelAddress('redis://sentinel-1:26379'));
  });

  // Last: it moves the master for good.
  t.test('after SENTINEL FAILOVER the store writes to the new master without being reopened', async (t) => {
    const store = openStore(1000);
    t.teardown(() => store.close());
    const key = { kind: 'code' as const, id: newId() };
    await store.set(key, { written: 'before' }, 60_000);
    await store.checkReady();
    const oldPort = await sentinels.masterPort();
    t.ok(oldPort !== null);
    t.match(await sentinels.failover(), /^\+OK/);
    const newPort = await sentinels.waitForNewMaster(oldPort as number, 20_000);
    t.not(newPort, oldPort, 'a replica was promoted');
    const until = Date.now() + 10_000;
    let ready = false;
    while (!ready && Date.now() < until) {
      ready = await store.checkReady().then(
        () => true,
        () => false,
      );
      if (!ready) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    t.ok(ready, 'checkReady (the /readyz write) succeeds again on the new master');
    t.same(await store.get(key), { written: 'before' }, 'a record replicated before the failover is still there');
    t.same(await store.consume(key), { status: 'consumed', value: { written: 'before' } }, 'and can be consumed on the new master');
  });
}
