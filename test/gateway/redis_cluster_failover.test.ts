/**
 * A Redis Cluster failover under token traffic, with real processes: three masters, three
 * replicas and a gateway on the `redis-cluster` store (docs/operations.md, "What a failover
 * costs"). `CLUSTER FAILOVER` on a replica is coordinated: its master stops taking writes until the
 * replica has caught up, so nothing acknowledged is lost.
 */
import t from 'tap';
import { assertFailoverUnderLoad, failoverClients } from '../helpers/failover_load.js';
import { startRedisCluster } from '../helpers/redis_cluster.js';
import { startTestGateway, writeSigningKey } from '../helpers/test_gateway.js';

const started = Date.now();
const setup = await startRedisCluster();
if (setup === null) {
  t.comment('no redis-server on the PATH: the Cluster failover is not tested');
} else {
  t.teardown(() => setup.stop());
  const cluster = setup;
  t.test('CLUSTER FAILOVER under load: no 500, no hang, no refresh family lost', async (t) => {
    const addClients = await failoverClients();
    const { signing } = await writeSigningKey(t);
    const gateway = await startTestGateway(t, {
      patch: (raw) => {
        addClients(raw);
        raw.store = { type: 'redis-cluster', nodes: cluster.nodes };
        raw.workers = { threads: 2 };
        raw.signing = signing;
      },
    });
    const replica = await cluster.replicaPort();
    await assertFailoverUnderLoad(t, {
      url: gateway.url,
      refreshLoops: 16,
      clientCredentialsLoops: 16,
      warmUpMs: 1500,
      trigger: async () => {
        t.match(await cluster.failover(replica), /^\+OK/, `CLUSTER FAILOVER accepted by the replica on port ${replica}`);
      },
      waitForElection: () => cluster.waitForMaster(replica, 20_000),
      recoveryBoundMs: 5000,
      settledMs: 2000,
    });
    const readyUntil = Date.now() + 5000;
    let ready = { status: 0, body: '' };
    while (ready.status !== 200 && Date.now() < readyUntil) {
      const res = await fetch(`${gateway.url}/readyz`);
      ready = { status: res.status, body: await res.text() };
      if (ready.status !== 200) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    t.equal(ready.status, 200, `/readyz passes after the failover within 5 s, without a restart (${ready.body})`);
  });
}
t.teardown(() => t.comment(`the file took ${Math.round((Date.now() - started) / 1000)} s`));
