/**
 * The Sentinel master killed (SIGKILL) under token traffic, with real processes: a master, two
 * replicas, three Sentinels and a gateway on the `redis-sentinel` store (docs/operations.md, "What
 * a failover costs"). The Sentinels notice after `down-after-milliseconds` (1 s here) and promote
 * the most up-to-date replica.
 */
import t from 'tap';
import { assertFailoverUnderLoad, failoverClients } from '../helpers/failover_load.js';
import { startRedisSentinel } from '../helpers/redis_sentinel.js';
import { startTestGateway, writeSigningKey } from '../helpers/test_gateway.js';

const started = Date.now();
const setup = await startRedisSentinel({ replicas: 2 });
if (setup === null) {
  t.comment('no redis-server on the PATH: the Sentinel failover is not tested');
} else {
  t.teardown(() => setup.stop());
  const sentinel = setup;
  // Issue 36: when the refresh chain records landed, the chain's rotation skipped `WAIT`, so the
  // rotations the old master acknowledged after the promotion were answered and then lost, and
  // every family ended in invalid_grant at its next refresh on the new master.
  t.test('the master SIGKILLed under load: no 500, no hang, no refresh family lost', async (t) => {
    // A grace window longer than the failover's write outage: a refresh answered 503 may have
    // rotated, and its retries must still fall in the window (docs/operations.md, "What a failover costs").
    const addClients = await failoverClients({ refreshTokenReuseGraceSeconds: 20 });
    const { signing } = await writeSigningKey(t);
    const gateway = await startTestGateway(t, {
      patch: (raw) => {
        addClients(raw);
        // WAIT for one of two replicas: Sentinel promotes the most up to date, and the other is left
        // for the new master to WAIT on.
        raw.store = { type: 'redis-sentinel', sentinels: sentinel.sentinels, name: sentinel.name, waitForReplicas: 1 };
        raw.workers = { threads: 2 };
        raw.signing = signing;
      },
    });
    const oldMaster = (await sentinel.masterPort()) as number;
    await assertFailoverUnderLoad(t, {
      url: gateway.url,
      refreshLoops: 16,
      clientCredentialsLoops: 16,
      warmUpMs: 1500,
      trigger: async () => {
        t.comment(`SIGKILL to the master on port ${await sentinel.killMaster()}`);
      },
      waitForElection: async () => {
        const newMaster = await sentinel.waitForNewMaster(oldMaster, 20_000);
        t.comment(`master moved from port ${oldMaster} to ${newMaster}`);
      },
      // 15 s: a killed master's writes stay refused until the remaining replica has resynced from
      // the new one, which on a loaded 2-core CI machine once took 9.3 s (docs/operations.md).
      recoveryBoundMs: 15_000,
      settledMs: 2000,
    });
    // Polled as a load balancer does: an idle connection learns of the failover at its next use.
    const readyUntil = Date.now() + 15_000;
    let ready = { status: 0, body: '' };
    while (ready.status !== 200 && Date.now() < readyUntil) {
      const res = await fetch(`${gateway.url}/readyz`);
      ready = { status: res.status, body: await res.text() };
      if (ready.status !== 200) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    t.equal(ready.status, 200, `/readyz passes on the new master within 15 s, without a restart (${ready.body})`);
  });
}
t.teardown(() => t.comment(`the file took ${Math.round((Date.now() - started) / 1000)} s`));
