import t from 'tap';
import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { MemoryStore } from '../../../workers/store/memory_store.js';
import { ChannelStore, serveMemoryStore } from '../../../workers/store/memory_store_channel.js';
import { FamilyRevokedError, StoreUnavailableError } from '../../../workers/store/store.js';
import type { Store, StoreKey } from '../../../workers/store/store.js';
import type { ChannelWorkerReport, ChannelWorkerTask } from '../../fixtures/channel_store_worker.js';
import { newFamily, newId, runStoreConformance } from './store_conformance.js';
import type { TapTest } from './store_conformance.js';

const workerFile = new URL('../../fixtures/channel_store_worker.ts', import.meta.url);

/** A MemoryStore served on a fresh channel, torn down with the subtest. */
function serveFreshStore(t: TapTest): { store: MemoryStore; channel: string } {
  const store = new MemoryStore();
  const channel = `tessera-test-${randomUUID()}`;
  const stop = serveMemoryStore(store, channel);
  t.teardown(async () => {
    stop();
    await store.close();
  });
  return { store, channel };
}

/**
 * Node 20 does not run `--import` flags in worker threads (the tsx loader is not inherited), so
 * the worker registers tsx itself before it imports the TypeScript fixture.
 */
const bootstrap = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))})
  .then(({ register }) => { register(); return import(${JSON.stringify(workerFile.href)}); })`;

/** Starts the fixture worker on `task` and collects its reports until it exits. */
function startWorker(task: ChannelWorkerTask): { worker: Worker; reports: Promise<ChannelWorkerReport[]> } {
  const worker = new Worker(bootstrap, { eval: true, workerData: task });
  const reports = new Promise<ChannelWorkerReport[]>((resolve, reject) => {
    const received: ChannelWorkerReport[] = [];
    worker.on('message', (message: ChannelWorkerReport) => received.push(message));
    worker.once('error', reject);
    worker.once('exit', (code) => (code === 0 ? resolve(received) : reject(new Error(`worker exited with ${code}`))));
  });
  return { worker, reports };
}

function waitForReady(worker: Worker): Promise<void> {
  return new Promise((resolve) => {
    const onMessage = (message: ChannelWorkerReport): void => {
      if (message.kind !== 'ready') return;
      worker.off('message', onMessage);
      resolve();
    };
    worker.on('message', onMessage);
  });
}

t.test('conformance', async (t) => {
  runStoreConformance(t, (tt): Store => new ChannelStore(serveFreshStore(tt).channel));
});

t.test('across 2 worker threads and the main thread, of 75 concurrent consumers exactly one consumes', async (t) => {
  const { store, channel } = serveFreshStore(t);
  const key: StoreKey = { kind: 'code', id: newId() };
  await store.set(key, { clientId: 'web' }, 60_000);
  const workers = [0, 1].map(() => startWorker({ kind: 'consume-race', channel, key, callers: 25 }));
  await Promise.all(workers.map(({ worker }) => waitForReady(worker)));

  const local = new ChannelStore(channel);
  t.teardown(() => local.close());
  for (const { worker } of workers) worker.postMessage('go');
  const mainResults = await Promise.all(Array.from({ length: 25 }, () => local.consume(key)));
  const workerReports = (await Promise.all(workers.map(({ reports }) => reports))).flat();

  const races = workerReports.flatMap((r) => (r.kind === 'consume-race' ? [r] : []));
  t.equal(races.length, 2);
  t.equal(new Set(races.map((r) => r.threadId)).size, 2, 'two distinct threads');
  t.notOk(races.some((r) => r.threadId === 0), 'none of them the main thread');
  const statuses = [...mainResults.map((r) => r.status), ...races.flatMap((r) => r.statuses)];
  t.equal(statuses.length, 75);
  t.equal(statuses.filter((s) => s === 'consumed').length, 1);
  t.equal(statuses.filter((s) => s === 'replayed').length, 74);
  for (const value of races.flatMap((r) => r.values)) t.same(value, { clientId: 'web' });
});

t.test('a worker thread reads a record with its Date intact', async (t) => {
  const { store, channel } = serveFreshStore(t);
  const key: StoreKey = { kind: 'misc', id: newId() };
  const at = new Date('2025-05-06T07:08:09.010Z');
  await store.set(key, { at, list: [1, 'two'] }, 60_000);
  const reports = await startWorker({ kind: 'round-trip', channel, key }).reports;
  t.same(reports, [{ kind: 'round-trip', threadId: reports[0]?.threadId, value: { at, list: [1, 'two'] }, isDate: true }]);
});

t.test('errors reach a worker thread as StoreUnavailableError and FamilyRevokedError', async (t) => {
  const { store, channel } = serveFreshStore(t);
  const family = newFamily();
  await store.revokeFamily(family, 60_000);
  const reports = await startWorker({ kind: 'errors', channel, revokedFamily: family, silentChannel: `nobody-${randomUUID()}` })
    .reports;
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

t.test('a call nobody answers rejects with StoreUnavailableError after the timeout', async (t) => {
  const store = new ChannelStore(`nobody-${randomUUID()}`, { timeoutMs: 150 });
  t.teardown(() => store.close());
  const started = performance.now();
  await t.rejects(store.consume({ kind: 'code', id: newId() }), StoreUnavailableError);
  const ms = performance.now() - started;
  t.ok(ms >= 140 && ms < 1000, `after ${Math.round(ms)} ms`);
});

t.test('close rejects the calls still waiting with StoreUnavailableError', async (t) => {
  const store = new ChannelStore(`nobody-${randomUUID()}`, { timeoutMs: 5000 });
  const pending = store.get({ kind: 'code', id: newId() });
  await store.close();
  await t.rejects(pending, StoreUnavailableError);
});

t.test('a value that cannot be cloned is refused at once, not timed out', async (t) => {
  const { channel } = serveFreshStore(t);
  const store = new ChannelStore(channel, { timeoutMs: 5000 });
  t.teardown(() => store.close());
  const err = await store.set({ kind: 'misc', id: newId() }, { fn: () => 1 }, 1000).then(
    () => null,
    (e: unknown) => e,
  );
  t.type(err, Error);
  t.notOk(err instanceof StoreUnavailableError || err instanceof FamilyRevokedError);
});

t.test('a stopped server no longer answers', async (t) => {
  const store = new MemoryStore();
  t.teardown(() => store.close());
  const channel = `tessera-test-${randomUUID()}`;
  const stop = serveMemoryStore(store, channel);
  const client = new ChannelStore(channel, { timeoutMs: 150 });
  t.teardown(() => client.close());
  await client.ping();
  stop();
  await t.rejects(client.ping(), StoreUnavailableError);
});
