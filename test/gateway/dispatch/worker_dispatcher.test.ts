// WorkerDispatcher (gateway/dispatch/worker_dispatcher.ts), the batching core, over a real Piscina pool
// running test/fixtures/dispatcher_worker.ts: batches are held in the worker behind shared gates
// the test opens, so "in flight" is real, not simulated. One pool serves every subtest (a worker
// thread takes seconds to load its TypeScript); each dispatcher is new, each gate used once.
import t from 'tap';
import { Writable } from 'node:stream';
import { Piscina } from 'piscina';
import { pino } from 'pino';
import type { HttpResponse } from 'uWebSockets.js';
import { Exchange } from '../../../gateway/http/exchange.js';
import { WorkerDispatcher, type DispatcherOptions } from '../../../gateway/dispatch/worker_dispatcher.js';
import { packMessage, type FormParams, type TokenTaskResult } from '../../../wire/token_task.js';
import type { DispatcherWorkerData, EchoBody } from '../../fixtures/dispatcher_worker.js';

const workerFile = new URL('../../fixtures/dispatcher_worker.mjs', import.meta.url);
const unavailableBody = '{"error":"temporarily_unavailable","error_description":"The service is temporarily unavailable. Retry later."}';
const serverErrorBody = '{"error":"server_error","error_description":"The server could not complete the request."}';

/** A pool of the fixture worker, every thread up before use (as the gateway starts its pool). */
interface TestPool {
  readonly pool: Piscina;
  /** Slot 0: batches running; slot 1: most ever running at once; 2 and up: gates. */
  readonly gates: Int32Array;
  /** A gate no batch has used yet, closed, as the `gate` parameter. */
  newGate(): string;
  open(gate: string): void;
}

async function startPool(t: { teardown(fn: () => unknown): void }, name: string, threads: number): Promise<TestPool> {
  const buffer = new SharedArrayBuffer(64 * Int32Array.BYTES_PER_ELEMENT);
  const workerData: DispatcherWorkerData = { name, gates: buffer };
  // The dispatcher does not depend on the gateway's tuning (gateway/start/server.ts); a fixed size does.
  const pool = new Piscina({ filename: workerFile.href, minThreads: threads, maxThreads: threads, workerData });
  t.teardown(() => pool.destroy());
  await Promise.all(Array.from({ length: threads }, () => pool.run(packMessage([]))));
  const gates = new Int32Array(buffer);
  let lastGate = 1;
  return {
    pool,
    gates,
    newGate: () => String(++lastGate),
    open(gate) {
      Atomics.store(gates, Number(gate), 1);
    },
  };
}

const shared = await startPool(t, 'first', 2);

interface Harness {
  dispatcher: WorkerDispatcher;
  /** The size of every batch sent, in order. */
  batches: number[];
  /** The dispatcher's log lines. */
  logs: { msg: string; requests?: number }[];
}

function dispatcherOn(pool: Piscina, options: Omit<DispatcherOptions, 'logger' | 'onBatch'>): Harness {
  const batches: number[] = [];
  const logs: Harness['logs'] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.length > 0) logs.push(JSON.parse(line) as Harness['logs'][number]);
      done();
    },
  });
  const dispatcher = new WorkerDispatcher(pool, {
    ...options,
    onBatch: (size) => batches.push(size),
    logger: pino({ level: 'info' }, sink),
  });
  return { dispatcher, batches, logs };
}

/** A token item the fixture echoes; `extra` may hold `gate`, `fail` or `short`. */
function request(dispatcher: WorkerDispatcher, id: string, extra: FormParams = {}): Promise<TokenTaskResult> {
  return dispatcher.call({ kind: 'token', grantType: 'client_credentials', clientId: 'm2m', params: { id, ...extra } });
}

function echoOf(result: TokenTaskResult): EchoBody {
  if (result[0] !== 200) throw new Error(`status ${result[0]}: ${result[1]}`);
  return JSON.parse(result[1]) as EchoBody;
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function until(what: string, predicate: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Whether `promise` has settled by the time the event loop has turned a few times. */
async function settledSoon(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let i = 0; i < 5; i++) await nextTurn();
  return settled;
}

/** The HTTP answer a real Exchange writes, over a recording stand-in for uWS's response. */
function recordedExchange(): { exchange: Exchange; answer: { status?: string; headers: Record<string, string>; body?: string } } {
  const answer: { status?: string; headers: Record<string, string>; body?: string } = { headers: {} };
  const res = {
    onAborted() {},
    cork(write: () => void) {
      write();
    },
    writeStatus(status: string) {
      answer.status = status;
    },
    writeHeader(key: string, value: string) {
      answer.headers[key] = value;
    },
    end(body: string) {
      answer.body = body;
    },
  };
  return { exchange: new Exchange(res as unknown as HttpResponse, 'post'), answer };
}

t.test('requests of one turn go as batches of at most maxBatch, at least one per thread', async (t) => {
  const { dispatcher, batches } = dispatcherOn(shared.pool, { threads: 2, maxQueue: 100, maxBatch: 4, batchesPerThread: 2 });

  const ten = await Promise.all(Array.from({ length: 10 }, (_, i) => request(dispatcher, `r${i}`)));
  t.same(batches, [4, 4, 2], 'ten requests: no batch over maxBatch');
  t.same(
    ten.map((result) => echoOf(result).id),
    Array.from({ length: 10 }, (_, i) => `r${i}`),
    'every request gets its own answer',
  );
  t.same(
    ten.map((result) => echoOf(result).batch),
    [4, 4, 4, 4, 4, 4, 4, 4, 2, 2],
  );

  batches.length = 0;
  await Promise.all(Array.from({ length: 3 }, (_, i) => request(dispatcher, `s${i}`)));
  t.same(batches, [2, 1], 'three requests on two threads: two batches');
});

t.test('at most threads × batchesPerThread batches are out; requests that wait go as one larger batch', async (t) => {
  const { gates, newGate, open } = shared;
  Atomics.store(gates, 1, 0);
  const { dispatcher, batches } = dispatcherOn(shared.pool, { threads: 2, maxQueue: 100, maxBatch: 64, batchesPerThread: 1 });

  // One turn: two batches of two, each held by a gate of its own.
  const [gateA, gateB] = [newGate(), newGate()];
  const first = [request(dispatcher, 'a0', { gate: gateA }), request(dispatcher, 'a1', { gate: gateA })];
  const second = [request(dispatcher, 'b0', { gate: gateB }), request(dispatcher, 'b1', { gate: gateB })];
  await until('both batches running', () => Atomics.load(gates, 0) === 2);
  t.same(batches, [2, 2]);

  const later: Promise<TokenTaskResult>[] = [];
  for (let i = 0; i < 6; i++) {
    later.push(request(dispatcher, `c${i}`));
    await nextTurn();
  }
  t.same(batches, [2, 2], 'nothing more is sent while both slots are taken');
  t.equal(dispatcher.pending, 10);

  open(gateA);
  const laterAnswers = await Promise.all(later);
  t.same(batches, [2, 2, 6], 'the six that waited go together when one slot frees');
  t.same(
    laterAnswers.map((result) => echoOf(result).batch),
    [6, 6, 6, 6, 6, 6],
  );
  t.same(
    (await Promise.all(first)).map((result) => echoOf(result).id),
    ['a0', 'a1'],
  );

  open(gateB);
  t.same(
    (await Promise.all(second)).map((result) => echoOf(result).id),
    ['b0', 'b1'],
  );
  t.equal(Atomics.load(gates, 1), 2, 'never more than two batches ran at once');
  t.equal(dispatcher.pending, 0);
});

t.test('past maxQueue requests in flight, a request is answered 503 with Retry-After at once', async (t) => {
  const { dispatcher, batches } = dispatcherOn(shared.pool, { threads: 1, maxQueue: 3, batchesPerThread: 1 });
  const gate = shared.newGate();

  const held = [request(dispatcher, 'h0', { gate }), request(dispatcher, 'h1'), request(dispatcher, 'h2')];
  t.same(
    await request(dispatcher, 'over'),
    [503, unavailableBody, 1, 'temporarily_unavailable'],
    'the fourth is refused before anything is answered',
  );

  const { exchange, answer } = recordedExchange();
  dispatcher.submit(exchange, { kind: 'token', grantType: 'client_credentials', clientId: 'm2m', params: { id: 'http' } });
  t.equal(answer.status, '503 Service Unavailable');
  t.equal(answer.headers['Retry-After'], '1');
  t.equal(answer.body, unavailableBody);
  t.equal(dispatcher.pending, 3, 'refused requests are not counted');

  shared.open(gate);
  t.same(
    (await Promise.all(held)).map((result) => echoOf(result).id),
    ['h0', 'h1', 'h2'],
  );
  t.equal(echoOf(await request(dispatcher, 'after')).id, 'after', 'accepted again once the queue drained');
  t.same(batches, [3, 1], 'refused requests are never sent');
});

t.test('a batch whose task fails answers every request in it with 500, and only those', async (t) => {
  const { dispatcher, batches, logs } = dispatcherOn(shared.pool, { threads: 2, maxQueue: 100, batchesPerThread: 1 });

  const answers = await Promise.all([
    request(dispatcher, 'f0', { fail: '1' }),
    request(dispatcher, 'f1'),
    request(dispatcher, 'ok0'),
    request(dispatcher, 'ok1'),
  ]);
  t.same(batches, [2, 2]);
  t.same(answers.slice(0, 2), [
    [500, serverErrorBody, null, 'server_error'],
    [500, serverErrorBody, null, 'server_error'],
  ]);
  t.same(
    answers.slice(2).map((result) => echoOf(result).id),
    ['ok0', 'ok1'],
  );
  t.same(
    logs.filter((line) => line.msg === 'worker task failed').map((line) => line.requests),
    [2],
  );

  t.equal(echoOf(await request(dispatcher, 'next')).id, 'next', 'the pool still serves');
  t.equal(dispatcher.pending, 0);
});

t.test('a request the worker left out of its answers gets 500; the others theirs', async (t) => {
  const { dispatcher, batches } = dispatcherOn(shared.pool, { threads: 1, maxQueue: 100, batchesPerThread: 1 });
  const answers = await Promise.all([request(dispatcher, 'x0', { short: '1' }), request(dispatcher, 'x1'), request(dispatcher, 'x2')]);
  t.same(batches, [3]);
  t.same(
    answers.slice(0, 2).map((result) => echoOf(result).id),
    ['x0', 'x1'],
  );
  t.same(answers[2], [500, serverErrorBody, null, 'server_error']);
});

t.test('drain() resolves only once every submitted request is answered, queued ones included', async (t) => {
  const { dispatcher } = dispatcherOn(shared.pool, { threads: 1, maxQueue: 100, batchesPerThread: 1 });
  const gate = shared.newGate();
  t.equal(await settledSoon(dispatcher.drain()), true, 'nothing pending: resolves at once');

  const events: string[] = [];
  const running = request(dispatcher, 'd0', { gate }).then(() => events.push('d0'));
  await nextTurn();
  // Waits behind the running batch: not yet sent to the pool.
  const queued = request(dispatcher, 'd1').then(() => events.push('d1'));
  const drained = dispatcher.drain().then(() => events.push('drained'));
  t.equal(await settledSoon(drained), false, 'not drained while d0 is held');
  t.same(events, []);

  shared.open(gate);
  await Promise.all([running, queued, drained]);
  t.same(events, ['d0', 'd1', 'drained']);
});

function requestAs(dispatcher: WorkerDispatcher, grantType: string, id: string, extra: FormParams = {}): Promise<TokenTaskResult> {
  return dispatcher.call({ kind: 'token', grantType, clientId: 'm2m', params: { id, ...extra } });
}

t.test('a thread that dies mid-batch: the started single-use requests get 500, client_credentials never shared their batch', async (t) => {
  const { dispatcher, batches, logs } = dispatcherOn(shared.pool, { threads: 1, maxQueue: 100, batchesPerThread: 1 });
  const answers = await Promise.all([
    requestAs(dispatcher, 'refresh_token', 'dies', { exit: '1' }),
    requestAs(dispatcher, 'client_credentials', 'cc'),
    requestAs(dispatcher, 'authorization_code', 'code'),
  ]);
  t.same(
    [...batches].sort((a, b) => a - b),
    [1, 2],
    'two lanes, two batches: the store-bound requests, and client_credentials alone',
  );
  t.same(answers[0], [500, serverErrorBody, null, 'server_error'], 'the request on the dying thread');
  t.equal(echoOf(answers[1] as TokenTaskResult).id, 'cc', 'client_credentials answered from its own batch');
  t.same(answers[2], [500, serverErrorBody, null, 'server_error'], 'a started code redemption is never run twice');
  const died = logs.find((line) => line.msg === 'worker thread died') as { grantTypes?: string[]; sentAgain?: number } | undefined;
  t.same(died?.grantTypes, ['refresh_token', 'authorization_code'], 'the log names the grant types that may have caused it');
  t.equal(died?.sentAgain, 0);
  t.equal(dispatcher.pending, 0);

  // A request whose second run dies too is answered, not sent a third time.
  const twice = await request(dispatcher, 'cc-dies', { exit: '1' });
  t.same(twice, [500, serverErrorBody, null, 'server_error']);
  t.same(batches.slice(2), [1, 1], 'sent twice, no more');
  // The dead threads never counted their batches out.
  Atomics.store(shared.gates, 0, 0);
});

t.test(
  'a thread stuck past stallTimeoutMs is terminated: its requests get 503 or go to another thread, batches behind it run elsewhere',
  async (t) => {
    const { dispatcher, batches, logs } = dispatcherOn(shared.pool, {
      threads: 2,
      maxQueue: 100,
      batchesPerThread: 1,
      stallTimeoutMs: 300,
    });
    const started = performance.now();
    const stuck = [
      requestAs(dispatcher, 'test_spin', 'spin', { spin: '20000' }),
      requestAs(dispatcher, 'client_credentials', 'cc0'),
      requestAs(dispatcher, 'refresh_token', 'rt'),
      requestAs(dispatcher, 'client_credentials', 'cc1'),
    ];
    const answers = await Promise.all(stuck);
    const ms = performance.now() - started;
    // Far under the 20 s loop, with room for a loaded CI machine to terminate and restart a thread
    // (5.9 s seen under coverage with four test files at once).
    t.ok(ms < 15_000, `answered in ${Math.round(ms)} ms, not after the 20 s loop`);
    const spinAnswers = answers.filter((a) => a[0] !== 200);
    const ids = answers.filter((a) => a[0] === 200).map((a) => echoOf(a).id);
    t.ok(ids.includes('cc0') && ids.includes('cc1'), 'client_credentials answered, wherever it ran');
    t.ok(
      spinAnswers.every((a) => a[0] === 503 && a[1] === unavailableBody && a[2] === 1),
      "the stuck thread's other requests: 503 with Retry-After",
    );
    t.equal(answers[0]?.[0], 503, 'the culprit: 503');
    const line = logs.find((l) => l.msg.startsWith('worker thread stopped answering')) as { grantTypes?: string[] } | undefined;
    t.ok(line?.grantTypes?.includes('test_spin'), 'the log names the grant type');
    t.equal(dispatcher.pending, 0);
    t.ok(batches.length >= 2);
    t.equal(echoOf(await request(dispatcher, 'after')).id, 'after', 'the pool serves on');
    // The terminated thread never counted its batch out.
    Atomics.store(shared.gates, 0, 0);
  },
);

// Last: it closes the shared pool.
t.test('replacePool() lets in-flight requests finish on the old pool and sends later ones to the new', async (t) => {
  const old = shared;
  const next = await startPool(t, 'second', 1);
  const { dispatcher } = dispatcherOn(old.pool, { threads: 1, maxQueue: 100, batchesPerThread: 1 });

  const gate = old.newGate();
  const inFlight = request(dispatcher, 'p0', { gate });
  await until('p0 running on the old pool', () => Atomics.load(old.gates, 0) === 1);
  const waiting = request(dispatcher, 'p1');
  await nextTurn();

  const replaced = dispatcher.replacePool(next.pool);
  t.equal(dispatcher.currentPool, next.pool);
  t.equal(await settledSoon(replaced), false, 'the old pool closes only after its running batch');

  old.open(gate);
  const [first, second] = await Promise.all([inFlight, waiting]);
  t.same(echoOf(first), { id: 'p0', pool: 'first', batch: 1 });
  t.same(echoOf(second), { id: 'p1', pool: 'second', batch: 1 });
  await replaced;
  t.equal(echoOf(await request(dispatcher, 'p2')).pool, 'second');
});

t.test('lanes: client_credentials never waits behind store-bound or password work', async (t) => {
  const { newGate, open } = shared;
  const { dispatcher } = dispatcherOn(shared.pool, {
    threads: 1,
    maxQueue: 100,
    batchesPerThread: 1,
    passwordLane: { concurrency: 1, maxQueue: 1 },
  });
  // The store lane's only slot is held (a refresh waiting for a frozen store, say).
  const storeGate = newGate();
  const refresh = requestAs(dispatcher, 'refresh_token', 'rt', { gate: storeGate });
  await nextTurn();
  const cc = await requestAs(dispatcher, 'client_credentials', 'cc');
  t.equal(echoOf(cc).id, 'cc', 'answered while the refresh is still held: one slot was out, in another lane');
  t.equal(dispatcher.pending, 1, 'the refresh is still out');
  open(storeGate);
  t.equal(echoOf(await refresh).id, 'rt');
});

t.test('lanes: the password lane is bounded, its overflow gets a fast 503, and it holds nothing else up', async (t) => {
  const { newGate, open } = shared;
  const { dispatcher } = dispatcherOn(shared.pool, {
    threads: 1,
    maxQueue: 100,
    batchesPerThread: 2,
    passwordLane: { concurrency: 1, maxQueue: 1 },
  });
  const gate = newGate();
  const running = requestAs(dispatcher, 'password', 'pw0', { gate });
  await nextTurn();
  const waiting = requestAs(dispatcher, 'password', 'pw1', { gate });
  const overflow = await requestAs(dispatcher, 'password', 'pw2');
  t.same(overflow, [503, unavailableBody, 1, 'temporarily_unavailable'], 'beyond concurrency + queue: 503 with Retry-After, at once');
  const login = await dispatcher.call({ kind: 'login', clientId: 'web', params: { id: 'login' } });
  t.same(login, [503, unavailableBody, 1, 'temporarily_unavailable'], "the login pages' sign-ins share the lane");
  t.equal(echoOf(await requestAs(dispatcher, 'client_credentials', 'cc')).id, 'cc', 'client_credentials is not held up');
  t.equal(echoOf(await requestAs(dispatcher, 'refresh_token', 'rt')).id, 'rt', 'nor are store-bound grants');
  open(gate);
  t.equal(echoOf(await running).id, 'pw0');
  t.equal(echoOf(await waiting).id, 'pw1', 'the queued one runs when the first is done');
});

t.test('lanes: the password lane sends its freed slots as one batch, not one batch per request', async (t) => {
  const { newGate, open } = shared;
  const { dispatcher, batches } = dispatcherOn(shared.pool, {
    threads: 2,
    maxQueue: 100,
    batchesPerThread: 2,
    passwordLane: { concurrency: 4, maxQueue: 100 },
  });
  // Four checks fill the lane, two to a thread, each pair held by a gate of its own.
  const [gateA, gateB] = [newGate(), newGate()];
  const held = ['a0', 'a1'].map((id) => requestAs(dispatcher, 'password', id, { gate: gateA }));
  held.push(...['b0', 'b1'].map((id) => requestAs(dispatcher, 'password', id, { gate: gateB })));
  const waiting = Array.from({ length: 4 }, (_, i) => requestAs(dispatcher, 'password', `w${i}`));
  await until('the first two batches out', () => batches.length === 2);
  for (let i = 0; i < 5; i++) await nextTurn();
  t.same(batches, [2, 2], 'the lane is full: four checks out, four waiting');

  // A pair comes back: its two slots go out together, and so do the next two.
  open(gateA);
  const answers = await Promise.all(waiting);
  t.same(batches, [2, 2, 2, 2], 'two slots freed at a time go as one batch of two');
  t.same(
    answers.map((result) => echoOf(result).batch),
    [2, 2, 2, 2],
  );
  open(gateB);
  t.same(
    (await Promise.all(held)).map((result) => echoOf(result).id),
    ['a0', 'a1', 'b0', 'b1'],
  );
  t.equal(dispatcher.pending, 0);
});

t.test('lanes: a refusal of the password lane is held shedDelayMs before it is sent; other lanes are not held up', async (t) => {
  const { newGate, open } = shared;
  const { dispatcher } = dispatcherOn(shared.pool, {
    threads: 1,
    maxQueue: 100,
    batchesPerThread: 2,
    passwordLane: { concurrency: 1, maxQueue: 0, shedDelayMs: 400 },
  });
  const gate = newGate();
  const running = requestAs(dispatcher, 'password', 'pw0', { gate });
  await nextTurn();
  const started = performance.now();
  const refused = requestAs(dispatcher, 'password', 'pw1').then((r) => [r, performance.now() - started] as const);
  const cc = await requestAs(dispatcher, 'client_credentials', 'cc');
  t.equal(echoOf(cc).id, 'cc', 'client_credentials is answered meanwhile');
  t.equal(await settledSoon(refused), false, 'the refusal is not sent at once');
  const [answer, ms] = await refused;
  t.same(answer, [503, unavailableBody, 1, 'temporarily_unavailable'], '503 with Retry-After');
  t.ok(ms >= 380, `held about 400 ms (${Math.round(ms)} ms)`);
  t.equal(dispatcher.pending, 1, 'a held refusal is not counted in flight');
  open(gate);
  t.equal(echoOf(await running).id, 'pw0');
});
