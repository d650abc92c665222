import { Piscina } from 'piscina';
import type { SigningKeyMaterial } from '../workers/protocol/signing_key.js';
import type { WorkerBootData } from '../workers/protocol/worker_boot.js';
import type { LoadedConfig } from './config/load.js';
import { workerConfigOf } from './config/worker_config.js';
import type { MemoryStoreHost } from './store/memory_store_host.js';

// The worker entry sits beside this file's compiled twin; from TypeScript sources (tests) a small
// shim registers tsx in the worker first.
const workerFile = new URL(import.meta.url.endsWith('.ts') ? '../workers/worker_from_source.mjs' : '../workers/worker.js', import.meta.url);

/** What every worker of a pool boots with; a validator reload starts a pool with a new module list. */
export interface PoolInputs {
  config: LoadedConfig;
  keys: readonly SigningKeyMaterial[];
  grantModules: readonly string[];
  validatorModules: readonly string[];
  passwordValidatorModule: string | null;
  /** The memory store's main-thread half; `null` on Redis, which workers reach themselves. */
  storeHost: MemoryStoreHost | null;
}

/** A worker pool that has booted: a worker that cannot start fails here, not on a request. */
export async function startWorkerPool(inputs: PoolInputs): Promise<Piscina> {
  const { config } = inputs;
  const threads = config.workers.threads;
  const boot: WorkerBootData = {
    config: workerConfigOf(config),
    signingKeys: inputs.keys,
    grantModules: inputs.grantModules,
    validatorModules: inputs.validatorModules,
    passwordValidatorModule: inputs.passwordValidatorModule,
    logLevel: config.logLevel,
  };
  const pool = new Piscina({
    filename: workerFile.href,
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: Number.POSITIVE_INFINITY,
    // Workers hold sockets (Redis, the store bridge's port) and must keep their event loop turning
    // between tasks, which synchronous Atomics.wait would block.
    atomics: 'disabled',
    // The dispatcher keeps two batches per thread out (one running, one queued behind it) so a
    // thread never waits for the next message; two may overlap their store round trips.
    concurrentTasksPerWorker: 2,
    maxQueue: config.workers.maxQueue,
    workerData: boot,
  });
  // Attached before any worker can have posted: workers start when the pool is constructed, but
  // their messages arrive on a later turn of the event loop.
  if (inputs.storeHost !== null) pool.on('message', inputs.storeHost.acceptOffer);
  try {
    await Promise.all(Array.from({ length: threads }, () => pool.run(packEmptyBatch())));
  } catch (err) {
    await pool.destroy().catch(() => {});
    throw err;
  }
  return pool;
}

/** A batch of no requests: every worker answers it once it has booted. */
function packEmptyBatch(): Uint8Array {
  // msgpack fixarray of length 0
  return Uint8Array.of(0x90);
}
