import { newStoreCommandBuffers, StoreCommandStats } from '../../wire/store_command_stats.js';
import { createStore } from '../../core/store/create_store.js';
import { MemoryStore } from '../../core/store/memory_store.js';
import type { Store } from '../../core/store/store.js';
import type { LoadedConfig } from '../config/load.js';
import { MemoryStoreHost } from '../dispatch/memory_store_host.js';

/** The store this thread opened, with what the workers need to share it. */
export interface OpenedStore {
  readonly store: Store;
  /** The memory store lives on this thread; each worker reaches it over a port of its own. */
  readonly host: MemoryStoreHost | null;
  /** Store command latency, counted by this thread and every worker into shared memory. */
  readonly stats: StoreCommandStats;
  readonly statsBuffers: ReturnType<typeof newStoreCommandBuffers>;
}

/** Opens the configured store (memory or Redis; docs/storage.md) and its latency counters. */
export function openStore(config: LoadedConfig): OpenedStore {
  const statsBuffers = newStoreCommandBuffers();
  const stats = new StoreCommandStats(statsBuffers);
  const store = createStore(config.store, { observe: stats.record });
  const host = store instanceof MemoryStore ? new MemoryStoreHost(store) : null;
  return { store, host, stats, statsBuffers };
}
