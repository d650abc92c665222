// `tessera start` under keep-alive load, over real HTTP (docs/operations.md, "Signals and
// shutdown", "Reload"): SIGHUP answers every request, SIGTERM
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

t.test('SIGTERM under keep-alive load: answers close their connections, every request answered, exit within the bound', async (t) => {
  const drainSeconds = 2;
  const requestTimeoutSeconds = 5;
  const gateway = await startSpawnedGateway(t, {
    validators: [],
    patch: (raw) => {
      raw.workers = { threads: 2 };
      raw.shutdown = { drainSeconds, requestTimeoutSeconds };
    },
  });
  const port = portOf(gateway.url);
  // The balancer sends new connections here until it has seen /readyz fail.
  let routedHere = true;
  const load = startKeepAliveLoad({
    port,
    connections,
    request: clientCredentialsRequest(port, basicAuthorization('m2m')),
    reconnect: () => routedHere,
  });
  await waitFor('the load to run', () => load.answered >= 200, 30_000);
  t.equal(load.closing, 0, 'before the stop, connections are kept open');

  const signalled = Date.now();
  const exited = gateway.terminate();
  await waitFor(
    '/readyz to fail',
    async () => {
      const response = await fetch(`${gateway.url}/readyz`).catch(() => undefined);
      await response?.arrayBuffer();
      return response?.status === 503;
    },
    10_000,
  );
  routedHere = false;
  // An answer already on its way when the drain began may still keep its connection open; the
  // next one on it closes it.
  load.mark();
  const code = await exited;
  const elapsed = Date.now() - signalled;
  await load.ended;
  t.comment(`exit after ${elapsed} ms: ${summary(load)}`);
  t.equal(code, 0, 'exit 0 after a graceful stop');
  t.equal(load.lost, 0, `no request lost with its connection: ${summary(load)}`);
  t.equal(load.answered, load.sent, 'every request sent was answered');
  t.same([...load.statuses.keys()], [200], `every answer 200: ${summary(load)}`);
  t.ok(load.closing >= connections, 'each connection was told to close');
  t.ok(
    load.keptOpenSinceMark() <= 1,
    `once draining, answers close their connections (most kept open on one: ${load.keptOpenSinceMark()})`,
  );
  t.ok(elapsed >= drainSeconds * 1000 - 100, 'served through the drain window');
  // docs/operations.md: drain, then at most requestTimeoutSeconds, then at most 2 s more.
  t.ok(elapsed < (drainSeconds + requestTimeoutSeconds + 2) * 1000, `exited within the bound (${elapsed} ms)`);
  t.notOk(/unanswered/.test(gateway.output()), 'no request left unanswered at the stop');
});
