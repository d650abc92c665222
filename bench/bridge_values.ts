/**
 * How record values should cross the memory store's thread bridge: a worker sends batches of 30
 * packed values of 180 bytes, the main thread keeps each in a Map (as the memory store keeps its
 * records) and answers with them, until it holds 1.5M; it prints the CPU of the whole process per
 * value and the main thread's event-loop delay (p99 and worst, what a request waiting behind a
 * garbage collection sees). Not part of `npm run bench`:
 *
 *   node --import tsx bench/bridge_values.ts bytes    # Uint8Array values, kept as Buffer pool slices
 *   node --import tsx bench/bridge_values.ts strings  # latin1 strings, kept as they are
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';

const mode = process.argv[2] === 'strings' ? 'strings' : 'bytes';
const target = 1_500_000;

// Plain JavaScript, so the worker needs no TypeScript loader.
const workerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const bytes = Buffer.alloc(180, 7);
const send = () => {
  const batch = [];
  for (let i = 0; i < 30; i++) batch.push(workerData === 'strings' ? bytes.toString('latin1') : new Uint8Array(bytes));
  parentPort.postMessage(batch);
};
parentPort.on('message', () => setImmediate(send));
send();`;

const records = new Map<number, string | Buffer>();
const delay = monitorEventLoopDelay({ resolution: 5 });
delay.enable();
const started = process.cpuUsage();
const worker = new Worker(workerSource, { eval: true, workerData: mode });
worker.on('message', (batch: (string | Uint8Array)[]) => {
  const answers: (string | Uint8Array)[] = [];
  for (const value of batch) {
    if (typeof value === 'string') {
      records.set(records.size, value);
      answers.push(value);
    } else {
      const kept = Buffer.from(value);
      records.set(records.size, kept);
      answers.push(new Uint8Array(kept));
    }
  }
  if (records.size < target) {
    worker.postMessage(answers);
    return;
  }
  delay.disable();
  const cpu = process.cpuUsage(started);
  const us = (cpu.user + cpu.system) / records.size;
  const ms = (ns: number): string => (ns / 1e6).toFixed(1);
  console.log(
    `${mode}: ${records.size.toLocaleString('en')} values, ${us.toFixed(2)} µs of CPU each, event-loop delay p99 ${ms(delay.percentile(99))} ms, worst ${ms(delay.max)} ms, RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`,
  );
  process.exit(0);
});
