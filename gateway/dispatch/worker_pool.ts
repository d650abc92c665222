import { Piscina } from 'piscina';
import type { KeySetCell } from '../../wire/key_set_cell.js';
import type { ApiResourceCell } from '../../wire/api_resource_cell.js';
import type { WorkerBootData } from '../../wire/worker_boot.js';
import type { LoadedConfig } from '../config/load.js';
import { workerConfigOf } from '../config/worker_config.js';
import type { MemoryStoreHost } from './memory_store_host.js';

// The worker entry sits beside this file's compiled twin; from TypeScript sources (tests) a small
// shim registers tsx in the worker first.
const workerFile = new URL(
  import.meta.url.endsWith('.ts') ? '../../workers/worker_from_source.mjs' : '../../workers/worker.js',
  import.meta.url,
);

type LoadBalancer = NonNullable<NonNullable<ConstructorParameters<typeof Piscina>[0]>['loadBalancer']>;

/** Tasks a thread runs at once; the bench's bare hand-off (bench/support/handoff_cost.ts) uses the same. */
export const tasksPerThread = 6;

/**
 * The least busy thread with room, whether or not a task is abortable, and never one the
 * dispatcher finds silent (`avoid`: its heartbeat stopped, docs/operations.md "Worker faults")
 * while another can take the task. Piscina's own balancer puts an abortable task only on an idle
 * thread and nothing beside one; it would run one batch per thread at a time and a
 * client_credentials batch would wait behind a batch that waits for the store. Terminating a
 * stuck thread ends the other batches there too: the dispatcher sends those to other threads or
 * answers them.
 */
export function leastBusyBalancer(avoid: ReadonlySet<number>): LoadBalancer {
  return (_task, workers) => {
    let candidate: (typeof workers)[number] | null = null;
    let fallback: (typeof workers)[number] | null = null;
    for (const worker of workers) {
      if (worker.currentUsage >= tasksPerThread) continue;
      if (avoid.has(worker.id)) {
        fallback ??= worker;
        continue;
      }
      if (worker.currentUsage === 0) return worker;
      if (candidate === null || worker.currentUsage < candidate.currentUsage) candidate = worker;
    }
    // Every thread that answers is full: a silent one beats Piscina's queue, where the dispatcher
    // could not tell a waiting batch from one on the silent thread.
    return candidate ?? fallback;
  };
}

/** What every worker of a pool boots with; a validator reload starts a pool with a new module list. */
export interface PoolInputs {
  config: LoadedConfig;
  /** The signing keys every worker reads, and reads again when they change. */
  keySet: KeySetCell;
  /** The store-kept API resources every worker reads before each batch; absent: none. */
  apiResources?: ApiResourceCell;
  grantModules: readonly string[];
  validatorModules: readonly string[];
  passwordValidatorModule: string | null;
  /** The profile service module, if `validatorsDir` has one. */
  profileServiceModule?: string | null;
  /** The memory store's main-thread half; `null` on Redis, which workers reach themselves. */
  storeHost: MemoryStoreHost | null;
  /** Workers send back what audit events need (wire/task_facts.ts). */
  recordFacts: boolean;
  /** Workers send back when they ran each request and its store commands (tracing). */
  recordTiming: boolean;
  /** Shared counters of store command latency (wire/store_command_stats.ts). */
  storeStats: WorkerBootData['storeStats'];
  /** The DPoP nonce key every gateway derives alike (gateway/keys/dpop_nonce_key.ts). */
  dpopNonceKey: Uint8Array;
  /** Threads the dispatcher finds silent, which new batches avoid (gateway/dispatch/worker_dispatcher.ts). */
  suspectThreads?: ReadonlySet<number>;
}

/** A worker pool that has booted: a worker that cannot start fails here, not on a request. */
export async function startWorkerPool(inputs: PoolInputs): Promise<Piscina> {
  const { config } = inputs;
  const threads = config.workers.threads;
  const boot: WorkerBootData = {
    config: workerConfigOf(config),
    keySet: inputs.keySet.buffer,
    ...(inputs.apiResources === undefined ? {} : { apiResources: inputs.apiResources.buffer }),
    grantModules: inputs.grantModules,
    validatorModules: inputs.validatorModules,
    passwordValidatorModule: inputs.passwordValidatorModule,
    profileServiceModule: inputs.profileServiceModule ?? null,
    logLevel: config.logLevel,
    recordFacts: inputs.recordFacts || inputs.recordTiming,
    recordTiming: inputs.recordTiming,
    storeStats: inputs.storeStats,
    dpopNonceKey: inputs.dpopNonceKey,
  };
  const pool = new Piscina({
    filename: workerFile.href,
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: Number.POSITIVE_INFINITY,
    // Workers hold sockets (Redis, the store bridge's port) and must keep their event loop turning
    // between tasks, which synchronous Atomics.wait would block.
    atomics: 'disabled',
    // The dispatcher keeps two batches per thread out in each of its three lanes (fast, password,
    // store), so a client_credentials batch never waits in Piscina's queue behind batches that
    // wait for the store or for argon2: 6 per thread, all asynchronous.
    concurrentTasksPerWorker: tasksPerThread,
    loadBalancer: leastBusyBalancer(inputs.suspectThreads ?? new Set()),
    // Piscina's own run and wait-time histograms, which nothing reads: the gateway's metrics count
    // batches itself (gateway/observability/metrics.ts). Off, each task skips two clock reads and two records.
    recordTiming: false,
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
