/**
 * What a store command costs through the memory store's thread bridge when nothing else runs: the
 * memory-store part of a request's floor (issue 33, scenarios/floor.ts). On the memory store the
 * records live on the gateway's main thread and a worker reaches them over its port
 * (wire/store_bridge.ts): every command the Redis floor counts as an ioredis round trip is a
 * bridge round trip here. A worker thread runs the store's own worker client
 * (workers/store/memory_store_client.ts) against the gateway's own host
 * (gateway/dispatch/memory_store_host.ts) and `MemoryStore` on this thread, sending the batch
 * size's worth of commands in one turn as a worker's batch does (threads/bridge_loop.ts). CPU of
 * the whole bench process (both threads) per command: the bridge and the store's own work, as
 * the gateway pays them.
 */
import { MessageChannel, Worker } from 'node:worker_threads';
import { MemoryStore } from '../../core/store/memory_store.js';
import { MemoryStoreHost } from '../../gateway/dispatch/memory_store_host.js';
import type { BridgeCommandCost } from '../report/results.js';
import { storeCommandName, type StoreCommand } from '../scenarios/floor.js';
import type { BridgeLoopRequest } from './threads/bridge_loop.js';

const workerFile = new URL('./threads/bridge_worker.mjs', import.meta.url);
const calibrationCommands = 2_000;

/**
 * Measures each of `commands` for about `seconds`, `perTurn` commands sent together (the round's
 * batch size, at least one). Starts its own worker and store and leaves nothing behind.
 */
export async function measureBridgeCommands(
  commands: readonly StoreCommand[],
  perTurn: number,
  options: { seconds?: number } = {},
): Promise<BridgeCommandCost[]> {
  const turn = Math.max(1, Math.round(perTurn));
  const store = new MemoryStore();
  const host = new MemoryStoreHost(store);
  const { port1, port2 } = new MessageChannel();
  host.serve(port1);
  const worker = new Worker(workerFile, { workerData: { port: port2 }, transferList: [port2] });
  const ask = (request: BridgeLoopRequest & { phase: 'prepare' | 'run' }): Promise<void> =>
    new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      worker.once('error', onError);
      worker.once('message', (answer: { ok: boolean; error?: string }) => {
        worker.off('error', onError);
        if (answer.ok) resolve();
        else reject(new Error(`bridge loop: ${answer.error ?? 'failed'}`));
      });
      worker.postMessage(request);
    });
  try {
    const costs: BridgeCommandCost[] = [];
    let from = 0;
    for (const command of commands) {
      const base = { command, perTurn: turn };
      await ask({ ...base, phase: 'prepare', from, count: calibrationCommands });
      const started = performance.now();
      await ask({ ...base, phase: 'run', from, count: calibrationCommands });
      const calibration = (performance.now() - started) / 1000;
      from += calibrationCommands;
      const count = Math.min(200_000, Math.max(2_000, Math.round(((options.seconds ?? 0.5) * calibrationCommands) / calibration)));
      await ask({ ...base, phase: 'prepare', from, count });
      const cpuAt = process.cpuUsage();
      await ask({ ...base, phase: 'run', from, count });
      const cpu = process.cpuUsage(cpuAt);
      from += count;
      costs.push({ name: storeCommandName(command), command, commands: count, perTurn: turn, us: (cpu.user + cpu.system) / count });
    }
    return costs;
  } finally {
    await worker.terminate();
    host.close();
    await store.close();
  }
}
