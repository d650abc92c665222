// `tessera start` under keep-alive load, over real HTTP (docs/operations.md, "Signals and
// shutdown", "Reload"; SPEC §8 "Readiness and drain"): SIGHUP answers every request, SIGTERM
// answers every request that arrived and exits within its bound. 40 connections, each request
// counted from the moment it is written to its answer.
import t from 'tap';
import { basicAuthorization } from '../../helpers/basic_authorization.js';
import { clientCredentialsRequest, startKeepAliveLoad, type KeepAliveLoad } from '../../helpers/keep_alive_load.js';
import { startSpawnedGateway } from '../../helpers/spawned_gateway.js';

const connections = 40;
t.setTimeout(600_000);

function portOf(url: string): number {
  return Number(new URL(url).port);
}

function summary(load: KeepAliveLoad): string {
  return JSON.stringify({
    sent: load.sent,
    answered: load.answered,
    lost: load.lost,
    lostHow: [...new Set(load.lostHow)],
    statuses: Object.fromEntries(load.statuses),
    refused: load.refused,
  });
}

async function waitFor(what: string, condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

t.test('SIGHUP under keep-alive load: three reloads, every request answered, none with 500', async (t) => {
  const started = Date.now();
  // Two threads: a pool of one cannot end early while another thread still holds batches.
  const gateway = await startSpawnedGateway(t, {
    validators: [],
    patch: (raw) => {
      raw.workers = { threads: 2 };
    },
  });
  const port = portOf(gateway.url);
  t.comment(`ready after ${Date.now() - started} ms`);
  const load = startKeepAliveLoad({ port, connections, request: clientCredentialsRequest(port, basicAuthorization('m2m')) });
  await waitFor('the load to run', () => load.answered >= 200, 30_000);
  const reloaded = () => gateway.logLines().filter((line) => line.msg === 'config reloaded').length;
  for (let reload = 1; reload <= 3; reload++) {
    const before = load.answered;
    gateway.signal('SIGHUP');
    // A reload boots a new pool (each thread loads tsx): seconds on a loaded machine.
    await waitFor(`reload ${reload}`, () => reloaded() >= reload, 60_000);
    t.comment(`reload ${reload} at ${Date.now() - started} ms: ${summary(load)}`);
    // Requests keep flowing through the old pool's last batches and the new pool's first.
    await waitFor('answers after the reload', () => load.answered >= before + 200, 30_000);
  }
  await load.stop();
  t.comment(summary(load));
  t.equal(load.lost, 0, `no request lost with its connection: ${summary(load)}`);
  t.equal(load.answered, load.sent, 'every request sent was answered');
  t.same([...load.statuses.keys()], [200], `every answer 200, none 500 or 503: ${summary(load)}`);
  t.ok(load.answered >= 800, 'the load ran through every reload');
  t.notOk(
    gateway.logLines().some((line) => line.msg === 'worker task failed' || /worker thread/.test(line.msg)),
    'no batch failed or thread was terminated',
  );
  t.equal(await gateway.terminate(), 0);
});
