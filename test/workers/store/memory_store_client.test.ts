import t from 'tap';
import { MessageChannel, Worker } from 'node:worker_threads';
import { MemoryStoreHost } from '../../../gateway/dispatch/memory_store_host.js';
import { isStorePortOffer, type BridgeRequest, type BridgeResponse } from '../../../wire/store_bridge.js';
import { MemoryStore } from '../../../core/store/memory_store.js';
import { createBridgedStore, type BridgedStoreOptions } from '../../../workers/store/memory_store_client.js';
import { FamilyRevokedError, StoreUnavailableError } from '../../../core/store/store.js';
import type { Store, StoreKey } from '../../../core/store/store.js';
import type { BridgeWorkerReport, BridgeWorkerTask } from '../../fixtures/memory_store_client_worker.js';
import { newFamily, newId, runStoreConformance } from '../../core/store/store_conformance.js';
import type { TapTest } from '../../core/store/store_conformance.js';

const workerFile = new URL('../../fixtures/memory_store_client_worker.ts', import.meta.url);

interface ServedStore {
  store: MemoryStore;
  host: MemoryStoreHost;
  /** A bridged store on this thread, over a fresh port the host serves; `watch` sees each message. */
  connect(options?: BridgedStoreOptions, watch?: PortWatch): Store;
}

interface PortWatch {
  requests?: (requests: BridgeRequest[]) => void;
  responses?: (responses: BridgeResponse[]) => void;
}

/** A MemoryStore behind a fresh host, torn down with the subtest. */
function serveFreshStore(t: TapTest): ServedStore {
  const store = new MemoryStore();
  const host = new MemoryStoreHost(store);
  t.teardown(async () => {
    host.close();
    await store.close();
  });
  const connect = (options?: BridgedStoreOptions, watch: PortWatch = {}): Store => {
    const { port1, port2 } = new MessageChannel();
    if (watch.requests !== undefined) port2.on('message', watch.requests);
    if (watch.responses !== undefined) port1.on('message', watch.responses);
    host.serve(port2);
    const store = createBridgedStore(port1, options);
    t.teardown(() => store.close());
    return store;
  };
  return { store, host, connect };
}

/**
 * Node 20 does not run `--import` flags in worker threads (the tsx loader is not inherited), so
 * the worker registers tsx itself before it imports the TypeScript fixture.
 */
const bootstrap = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))})
  .then(({ register }) => { register(); return import(${JSON.stringify(workerFile.href)}); })`;

/** Starts the fixture worker on `task`, serves its port, and collects its reports until it exits. */
function startWorker(host: MemoryStoreHost, task: BridgeWorkerTask): { worker: Worker; reports: Promise<BridgeWorkerReport[]> } {
  const worker = new Worker(bootstrap, { eval: true, workerData: task });
  worker.on('message', host.acceptOffer);
  const reports = new Promise<BridgeWorkerReport[]>((resolve, reject) => {
    const received: BridgeWorkerReport[] = [];
    worker.on('message', (message: unknown) => {
      if (!isStorePortOffer(message)) received.push(message as BridgeWorkerReport);
    });
    worker.once('error', reject);
    worker.once('exit', (code) => (code === 0 ? resolve(received) : reject(new Error(`worker exited with ${code}`))));
  });
  return { worker, reports };
}

function waitForReady(worker: Worker): Promise<void> {
  return new Promise((resolve) => {
    const onMessage = (message: BridgeWorkerReport): void => {
      if (message.kind !== 'ready') return;
      worker.off('message', onMessage);
      resolve();
    };
    worker.on('message', onMessage);
  });
}

t.test('conformance', async (t) => {
  runStoreConformance(t, (tt): Store => serveFreshStore(tt).connect());
});

t.test('across 2 worker threads and the main thread, of 75 concurrent consumers exactly one consumes', async (t) => {
  const { store, host, connect } = serveFreshStore(t);
  const key: StoreKey = { kind: 'code', id: newId() };
  await store.set(key, { clientId: 'web' }, 60_000);
  const workers = [0, 1].map(() => startWorker(host, { kind: 'consume-race', key, callers: 25 }));
  await Promise.all(workers.map(({ worker }) => waitForReady(worker)));

  const local = connect();
  t.teardown(() => local.close());
  for (const { worker } of workers) worker.postMessage('go');
  const mainResults = await Promise.all(Array.from({ length: 25 }, () => local.consume(key)));
  const workerReports = (await Promise.all(workers.map(({ reports }) => reports))).flat();

  const races = workerReports.flatMap((r) => (r.kind === 'consume-race' ? [r] : []));
  t.equal(races.length, 2);
  t.equal(new Set(races.map((r) => r.threadId)).size, 2, 'two distinct threads');
  t.notOk(
    races.some((r) => r.threadId === 0),
    'none of them the main thread',
  );
  const statuses = [...mainResults.map((r) => r.status), ...races.flatMap((r) => r.statuses)];
  t.equal(statuses.length, 75);
  t.equal(statuses.filter((s) => s === 'consumed').length, 1);
  t.equal(statuses.filter((s) => s === 'replayed').length, 74);
  for (const value of races.flatMap((r) => r.values)) t.same(value, { clientId: 'web' });
});

t.test('a worker thread reads a record with its Date intact', async (t) => {
  const { store, host } = serveFreshStore(t);
  const key: StoreKey = { kind: 'misc', id: newId() };
  const at = new Date('2025-05-06T07:08:09.010Z');
  await store.set(key, { at, list: [1, 'two'] }, 60_000);
  const reports = await startWorker(host, { kind: 'round-trip', key }).reports;
  t.same(reports, [{ kind: 'round-trip', threadId: reports[0]?.threadId, value: { at, list: [1, 'two'] }, isDate: true }]);
});

t.test('errors reach a worker thread as StoreUnavailableError and FamilyRevokedError', async (t) => {
  const { store, host } = serveFreshStore(t);
  const family = newFamily();
  await store.revokeFamily(family, 60_000);
  const reports = await startWorker(host, { kind: 'errors', revokedFamily: family }).reports;
  const report = reports[0];
  if (report?.kind !== 'errors') throw new Error('no error report from the worker');
  t.same(report.revoked, {
    name: 'FamilyRevokedError',
    code: 'family_revoked',
    message: `family ${family} is revoked`,
    isStoreUnavailable: false,
    isFamilyRevoked: true,
  });
  t.match(report.silent, { name: 'StoreUnavailableError', code: 'store_unavailable', isStoreUnavailable: true, isFamilyRevoked: false });
  t.ok(report.silentMs >= 190 && report.silentMs < 1000, `timed out after ${Math.round(report.silentMs)} ms`);
});

t.test('a FamilyRevokedError names its family on this side of the bridge too', async (t) => {
  const { store, connect } = serveFreshStore(t);
  const family = newFamily();
  await store.revokeFamily(family, 60_000);
  const bridged = connect();
  t.teardown(() => bridged.close());
  const err = await bridged.putIfAbsent({ kind: 'rt', id: newId(), family }, 1, 1000).then(
    () => null,
    (e: unknown) => e,
  );
  t.type(err, FamilyRevokedError);
  t.equal((err as FamilyRevokedError).family, family);
});

t.test('a call nobody answers rejects with StoreUnavailableError after the timeout', async (t) => {
  const { port1, port2 } = new MessageChannel();
  const store = createBridgedStore(port1, { timeoutMs: 150 });
  t.teardown(async () => {
    await store.close();
    port2.close();
  });
  const started = performance.now();
  await t.rejects(store.consume({ kind: 'code', id: newId() }), StoreUnavailableError);
  const ms = performance.now() - started;
  t.ok(ms >= 140 && ms < 1000, `after ${Math.round(ms)} ms`);
});

t.test('each unanswered call gets its own whole timeout, and answered ones are not failed by it', async (t) => {
  const { port1, port2 } = new MessageChannel();
  // Answers only `ping`, and only after the first call has timed out.
  port2.on('message', (requests: { id: number; method: string }[]) => {
    const pings = requests.filter((r) => r.method === 'ping');
    if (pings.length > 0) setTimeout(() => port2.postMessage(pings.map((r) => ({ id: r.id, ok: true, value: undefined }))), 150);
  });
  const store = createBridgedStore(port1, { timeoutMs: 200 });
  t.teardown(async () => {
    await store.close();
    port2.close();
  });
  const started = performance.now();
  const failure = (call: Promise<unknown>): Promise<{ err: unknown; ms: number }> =>
    call.then(
      () => ({ err: undefined, ms: performance.now() - started }),
      (err: unknown) => ({ err, ms: performance.now() - started }),
    );
  const first = failure(store.get({ kind: 'code', id: newId() }));
  await new Promise((resolve) => setTimeout(resolve, 120));
  const second = failure(store.get({ kind: 'code', id: newId() }));
  const answered = store.ping();
  const [a, b] = await Promise.all([first, second]);
  t.type(a.err, StoreUnavailableError);
  t.type(b.err, StoreUnavailableError);
  t.ok(a.ms >= 190 && a.ms < 300, `the first after ${Math.round(a.ms)} ms`);
  t.ok(b.ms >= 310 && b.ms < 600, `the second 200 ms after it was made: ${Math.round(b.ms)} ms`);
  await t.resolves(answered, 'a call answered after an earlier one timed out settles with its answer');
});

t.test('close rejects the calls still waiting with StoreUnavailableError', async (t) => {
  const { port1, port2 } = new MessageChannel();
  t.teardown(() => port2.close());
  const store = createBridgedStore(port1, { timeoutMs: 5000 });
  const pending = store.get({ kind: 'code', id: newId() });
  await store.close();
  await t.rejects(pending, StoreUnavailableError);
});

t.test('an argument that cannot be cloned is refused at once, not timed out, and only its own call fails', async (t) => {
  const { connect } = serveFreshStore(t);
  const store = connect({ timeoutMs: 5000 });
  t.teardown(() => store.close());
  const key: StoreKey = { kind: 'misc', id: newId() };
  // Values cross packed (a function in one is dropped as msgpack drops it, as on every store);
  // a key is cloned as given. Both calls leave in the same message.
  const uncloneable = { kind: 'misc', id: newId(), toJSON: () => 1 } as StoreKey;
  const [bad, good] = await Promise.allSettled([store.set(uncloneable, { ok: true }, 1000), store.set(key, { ok: true }, 1000)]);
  t.equal(bad.status, 'rejected');
  const err: unknown = bad.status === 'rejected' ? bad.reason : null;
  t.type(err, Error);
  t.notOk(err instanceof StoreUnavailableError || err instanceof FamilyRevokedError);
  t.equal(good.status, 'fulfilled');
  t.same(await store.get(key), { ok: true });
});

t.test('record values cross the bridge packed: one string each way, unpacked on each side', async (t) => {
  const { store, connect } = serveFreshStore(t);
  const sent: unknown[] = [];
  const answered: unknown[] = [];
  const bridged = connect(undefined, {
    requests: (requests) => sent.push(...requests.map((r) => r.args[1])),
    responses: (responses) => answered.push(...responses.map((r) => (r.ok ? r.value : r.error))),
  });
  const key: StoreKey = { kind: 'misc', id: newId() };
  const value = { nested: { list: [1, 'two'] }, at: new Date('2025-05-06T07:08:09.010Z') };
  await bridged.set(key, value, 60_000);
  t.same(await bridged.get(key), value);
  t.type(sent[0], 'string', 'the value sent is packed');
  t.equal(answered[1], sent[0], 'the record read comes back as the same packed string');
  t.same(await store.get(key), value, 'the main thread reads it unpacked');
});

t.test('the calls made in one turn of the event loop cross as one message each way', async (t) => {
  const { connect } = serveFreshStore(t);
  let requests = 0;
  let responses = 0;
  const bridged = connect(undefined, { requests: () => requests++, responses: () => responses++ });
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => bridged.increment(`c-${i % 2}`, 60_000)));
  t.same(
    results.map((r) => r.count).sort((a, b) => a - b),
    [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10],
  );
  t.equal(requests, 1, 'one request message');
  t.equal(responses, 1, 'one response message');
});

t.test('a closed host no longer answers, and the calls waiting on it reject at once', async (t) => {
  const { host, connect } = serveFreshStore(t);
  const client = connect({ timeoutMs: 5000 });
  t.teardown(() => client.close());
  await client.ping();
  // Answered later than the close below: the host closes the port before it can reply.
  const waiting = client.increment(`c-${newId()}`, 1000);
  host.close();
  const started = performance.now();
  await t.rejects(waiting, StoreUnavailableError);
  await t.rejects(client.ping(), StoreUnavailableError);
  t.ok(performance.now() - started < 1000, 'well before the 5 s timeout');
});
