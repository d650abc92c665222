/**
 * The `redis-sentinel` store when a failover notice (`+switch-master`) reaches it while it is
 * asking the Sentinels for the master, after its connection to the old one was lost: a scripted
 * Sentinel (test/helpers/fake_sentinel.ts) makes that moment certain. With real Sentinels it came
 * by chance, in about one master SIGKILL out of three (test/gateway/redis_sentinel_master_killed.test.ts):
 * ioredis then ended the client for good, and the gateway's own store connection, the one
 * `/readyz` writes through, answered "store not serving" until a restart.
 */
import t from 'tap';
import { RedisStore } from '../../../core/store/redis_store.js';
import { startFakeSentinel } from '../../helpers/fake_sentinel.js';
import { findRedisServer, startRedisServer } from '../../helpers/redis_server.js';

if (findRedisServer() === null) {
  t.comment('no redis-server on the PATH: the Sentinel store under a failover notice is not tested');
} else {
  t.test('a +switch-master while the store asks for the master does not leave it closed', async (t) => {
    const oldMaster = await startRedisServer();
    const newMaster = await startRedisServer();
    t.teardown(() => Promise.all([oldMaster.stop(), newMaster.stop()]));
    const sentinel = await startFakeSentinel({ name: 'tessera', masterPort: oldMaster.port });
    t.teardown(() => sentinel.close());
    const store = new RedisStore({
      sentinels: [sentinel.address],
      name: 'tessera',
      keyPrefix: `switch${process.pid}:`,
      commandTimeoutMs: 1000,
    });
    t.teardown(() => store.close());
    await store.checkReady();
    // The failover detector subscribes once the connection is up.
    const subscribedBy = Date.now() + 5000;
    while (sentinel.subscribers() === 0 && Date.now() < subscribedBy) await new Promise((resolve) => setTimeout(resolve, 20));
    t.ok(sentinel.subscribers() > 0, 'the store listens for +switch-master');

    // The master dies; the Sentinels are slow to answer (a loaded machine, a failover under way),
    // and the failover's notice arrives while the store waits for their answer.
    sentinel.replyDelayMs = 500;
    const asked = sentinel.nextMasterQuery();
    await oldMaster.stop();
    await asked;
    sentinel.masterPort = newMaster.port;
    sentinel.publishSwitchMaster(oldMaster.port, newMaster.port);
    await new Promise((resolve) => setTimeout(resolve, 600));
    sentinel.replyDelayMs = 0;

    const until = Date.now() + 5000;
    let ready = false;
    let last = '';
    while (!ready && Date.now() < until) {
      ready = await store.checkReady().then(
        () => true,
        (err: Error) => {
          last = err.message;
          return false;
        },
      );
      if (!ready) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    t.ok(ready, `checkReady passes on the new master within 5 s, without reopening the store (last refusal: ${last || 'none'})`);
  });
}
