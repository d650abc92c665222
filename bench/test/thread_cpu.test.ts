import { Worker } from 'node:worker_threads';
import t from 'tap';
import { statTicks } from '../support/proc_stats.js';
import { formatScenario } from '../report/table.js';
import { threadFigures } from '../runner/measure.js';
import { splitTicks, threadCpuSeconds } from '../support/thread_cpu.js';
import { contenderResult, roundResult, summary } from './summary_fixture.js';

t.test('statTicks reads utime + stime after a command name with spaces and parentheses', async (t) => {
  // proc(5): pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime …
  const line = '4242 (node (a) b) S 1 4242 4242 0 -1 4194304 100 0 0 0 731 122 0 0 20 0 9 0';
  t.equal(statTicks(line), 853);
  t.equal(statTicks('4242 (node) S 1'), null, 'a truncated line does not parse');
});

t.test('splitTicks puts the thread whose id is the pid apart from all the others', async (t) => {
  const threads = new Map([
    [100, 250],
    [101, 400],
    [102, 150],
    [103, 0],
  ]);
  t.same(splitTicks(100, threads, 100), { main: 2.5, others: 5.5 });
  t.same(splitTicks(999, threads, 100), { main: 0, others: 8 }, 'no main thread: everything is the others');
});

t.test(
  'a busy worker thread counts as the others, not the main thread',
  { skip: threadCpuSeconds(process.pid) === null && 'no /proc' },
  async (t) => {
    const before = threadCpuSeconds(process.pid);
    // Spins in a worker thread until that thread has used 0.4 s of CPU by its own count
    // (/proc/thread-self: a busy machine gives a spin less CPU than its wall time), says so, and
    // stays alive until told to go.
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads');
     const { readFileSync } = require('node:fs');
     const ticks = () => {
       const stat = readFileSync('/proc/thread-self/stat', 'latin1');
       const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
       return Number(fields[11]) + Number(fields[12]);
     };
     const start = ticks();
     const giveUp = Date.now() + 30000;
     while (ticks() - start < 40 && Date.now() < giveUp) for (let i = 0; i < 100000; i++);
     parentPort.postMessage('spun'); parentPort.once('message', () => process.exit(0));`,
      { eval: true },
    );
    t.teardown(() => worker.terminate());
    await new Promise((resolve) => worker.once('message', resolve));
    const after = threadCpuSeconds(process.pid);
    worker.postMessage('go');
    if (before === null || after === null) throw new Error('no reading');
    t.ok(after.others - before.others >= 0.3, `the others spun (${(after.others - before.others).toFixed(2)} s)`);
    t.ok(after.main - before.main < 0.3, `the main thread did not (${(after.main - before.main).toFixed(2)} s)`);
  },
);

t.test('threadFigures divides each side of the split by the requests of the window', async (t) => {
  const figures = threadFigures({ main: 10, others: 20 }, { main: 10.5, others: 21.5 }, { requests: 25_000 });
  t.same(figures, { mainUsPerRequest: 20, othersUsPerRequest: 60 });
  t.equal(threadFigures(null, { main: 1, others: 1 }, { requests: 10 }), null, 'no first reading');
  t.equal(threadFigures({ main: 1, others: 1 }, { main: 2, others: 2 }, { requests: 0 }), null, 'no requests');
});

t.test('the table prints the split of a contender that has one', async (t) => {
  const round = { ...roundResult({ n: 1, rps: 5_000 }), threads: { mainUsPerRequest: 21.25, othersUsPerRequest: 40 } };
  const tessera = { ...contenderResult('tessera/memory', 'tessera', 'memory', summary(5_000)), rounds: [round] };
  const text = formatScenario({ name: 'client_credentials', measures: '', contenders: [tessera], ratios: [], notes: [], hasErrors: false });
  t.match(text, /server CPU per request by thread: 21\.3 µs on the main \(uWS\) thread, 40\.0 µs on the others/);
  const without = { ...tessera, rounds: [roundResult({ n: 1, rps: 5_000 })] };
  t.notMatch(
    formatScenario({ name: 'client_credentials', measures: '', contenders: [without], ratios: [], notes: [], hasErrors: false }),
    /by thread/,
    'no split, no line',
  );
});
