// WorkerDispatcher.replacePool (gateway/dispatch/worker_dispatcher.ts) with an old pool of two threads, over
// real Piscina pools of test/fixtures/dispatcher_worker.ts (batches held behind shared gates):
// one thread of the old pool going idle must not end the other's batch (docs/operations.md,
// "Reload"). Piscina's own close() did: it resolved once any one thread was idle, then terminated
// the others.
import t from 'tap';
import { Piscina } from 'piscina';
import { pino } from 'pino';
import { WorkerDispatcher } from '../../../gateway/dispatch/worker_dispatcher.js';
import { packMessage, type TokenTaskResult } from '../../../wire/token_task.js';
import type { DispatcherWorkerData, EchoBody } from '../../fixtures/dispatcher_worker.js';

const workerFile = new URL('../../fixtures/dispatcher_worker.mjs', import.meta.url);

async function startPool(name: string, threads: number) {
  const buffer = new SharedArrayBuffer(64 * Int32Array.BYTES_PER_ELEMENT);
  const workerData: DispatcherWorkerData = { name, gates: buffer };
  const pool = new Piscina({ filename: workerFile.href, minThreads: threads, maxThreads: threads, workerData });
  t.teardown(() => pool.destroy());
  await Promise.all(Array.from({ length: threads }, () => pool.run(packMessage([]))));
  // Slot 0: batches running; 2 and up: gates, opened by storing 1.
  return { pool, gates: new Int32Array(buffer) };
}

function request(dispatcher: WorkerDispatcher, id: string, gate: number): Promise<TokenTaskResult> {
  return dispatcher.call({ kind: 'token', grantType: 'client_credentials', clientId: 'm2m', params: { id, gate: String(gate) } });
}

function echoOf(result: TokenTaskResult): EchoBody {
  if (result[0] !== 200) throw new Error(`status ${result[0]}: ${result[1]}`);
  return JSON.parse(result[1]) as EchoBody;
}

async function until(what: string, predicate: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

t.test('replacePool() keeps the old pool until every thread of it has finished its batches', async (t) => {
  const [old, next] = await Promise.all([startPool('first', 2), startPool('second', 1)]);
  const dispatcher = new WorkerDispatcher(old.pool, { threads: 2, maxQueue: 100, batchesPerThread: 1, logger: pino({ level: 'silent' }) });
  // Two requests in one turn: two batches of one, one on each thread.
  const a = request(dispatcher, 'a', 2);
  const b = request(dispatcher, 'b', 3);
  await until('a batch running on each thread', () => Atomics.load(old.gates, 0) === 2);

  let replaced = false;
  const replacing = dispatcher.replacePool(next.pool).then(() => {
    replaced = true;
  });
  Atomics.store(old.gates, 2, 1);
  t.same(echoOf(await a), { id: 'a', pool: 'first', batch: 1 }, 'the first thread finishes its batch');
  // The first thread is idle now; the second still holds a batch.
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.notOk(replaced, 'the old pool stays while one of its threads holds a batch');
  Atomics.store(old.gates, 3, 1);
  t.same(echoOf(await b), { id: 'b', pool: 'first', batch: 1 }, 'the second finishes its batch on the old pool, not terminated');
  await replacing;
  t.equal(old.pool.threads.length, 0, 'then the old pool has ended');
  Atomics.store(next.gates, 4, 1);
  t.equal(echoOf(await request(dispatcher, 'c', 4)).pool, 'second', 'later requests go to the new pool');
});
