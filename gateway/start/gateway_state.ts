import type { Piscina } from 'piscina';
import type { Logger } from 'pino';
import type { LoadedConfig } from '../config/load.js';
import type { AuditEvents } from '../observability/events/audit_events.js';
import type { Listener } from '../http/listener.js';
import type { KeyRing } from '../keys/key_ring.js';
import type { PageSecretLoad } from '../keys/page_secret.js';
import { createLogger } from '../observability/logger.js';
import type { ManagementListener } from '../observability/management_listener.js';
import type { ClientRegistry } from '../client_registry/client_registry.js';
import type { ApiResourceRegistry } from '../client_registry/api_resource_registry.js';
import { ApiResourceCell } from '../../wire/api_resource_cell.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { ProcessSlot, StartOptions } from './start_options.js';
import { openTracing } from '../observability/tracing/open_tracing.js';
import type { RequestTracing } from '../observability/tracing/request_tracing.js';
import type { OpenedStore } from './open_store.js';

/**
 * The gateway's mutable state, in one place: what a config reload or the page secret's late
 * arrival replaces while it runs, and what the start has opened so far, which a failed start
 * closes again (`closeStarted` in stop.ts). Everything else a step builds it returns.
 */
export interface GatewayState {
  readonly options: StartOptions;
  readonly logger: Logger;
  /** Only with several processes: a lone gateway's metrics and events keep their shape. */
  readonly processSlot: ProcessSlot | undefined;
  readonly storage: OpenedStore;
  readonly tracing: RequestTracing | undefined;

  /** Replaced by a config reload; read here wherever a later pool or route set is built. */
  config: LoadedConfig;
  /**
   * The pages' secret; `undefined` while the store has not answered (docs/operations.md,
   * "Starting without the store").
   */
  pageSecret: string | undefined;
  /** The discovery document served now: rebuilt when the grant types or the config change. */
  discoveryBody: string;
  /** The stop under way, once `stop()` was called: a second call waits for the same one. */
  stopping?: Promise<void>;

  /** Opened so far: a failed start closes these. */
  events?: AuditEvents;
  keyRing?: KeyRing;
  pageSecretLoad?: PageSecretLoad;
  pool?: Piscina;
  /** Declared before the key ring, whose activations count into it, is opened. */
  metrics?: GatewayMetrics;
  management?: ManagementListener;
  /** With `clientRegistry.store`: store-kept clients, cached, polled (gateway/client_registry/). */
  clientRegistry?: ClientRegistry;
  /** With `clientRegistry.store`: store-kept API resources, all in memory, polled. */
  apiResources?: ApiResourceRegistry;
  /** Where the workers read the store-kept API resources (every pool boots with it). */
  readonly apiResourceCell: ApiResourceCell;
  listener?: Listener;
  stopWatching: () => void;
}

/** The first step: the config as given, its logger, the process slot, the store and tracing. */
export function newGatewayState(options: StartOptions, openStore: (config: LoadedConfig) => OpenedStore): GatewayState {
  const { config } = options;
  const logger = options.logger ?? createLogger(config);
  const processSlot = options.process !== undefined && options.process.count > 1 ? options.process : undefined;
  const storage = openStore(config);
  const tracing = openTracing(config, process.env, options.spanProcessor);
  return {
    options,
    logger,
    processSlot,
    storage,
    tracing,
    config,
    pageSecret: undefined,
    discoveryBody: '',
    stopWatching: () => {},
    apiResourceCell: ApiResourceCell.create(),
  };
}
