import type { SpanProcessor } from '@opentelemetry/sdk-trace';
import type { Logger } from 'pino';
import type { LoadedConfig } from '../config/load.js';
import type { ReloadResult } from './config_reload.js';
import type { AuditEventHook, AuditEvents } from '../observability/events/audit_events.js';
import type { KeyReloadResult } from '../keys/key_ring.js';
import type { GatewayMetrics } from '../observability/metrics.js';

export interface StartOptions {
  config: LoadedConfig;
  logger?: Logger;
  /**
   * Extra grant-handler modules (URLs or absolute paths) whose default export is a `GrantHandler`.
   * They join the same registry as the built-in grants, in every worker.
   */
  grantModules?: readonly string[];
  /** Extension-grant validator modules beyond those in `validatorsDir` (the builder's `addExtensionGrantValidator`). */
  validatorModules?: readonly string[];
  /** Reload validators when files in `validatorsDir` change (default true). */
  watchValidators?: boolean;
  /** Where the development key file lives on the memory store; defaults to `./.tessera`. */
  devKeyDir?: string;
  /** Where `TESSERA_KEY_ENCRYPTION_KEY` is read from (docs/security.md, "Keys at rest"); default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Reload signing keys when a configured key file changes (default true). */
  watchKeys?: boolean;
  /**
   * Called with every audit event (docs/operations.md, "Events"), after the request it is about
   * was answered; besides the sinks of `events` in the config. Must not throw (a throw is logged).
   */
  onEvent?: AuditEventHook;
  /**
   * Where trace spans go when tracing is on (`tracing.enabled` or `OTEL_TRACES_EXPORTER=otlp`),
   * instead of the OTLP exporter the `OTEL_*` variables configure (docs/operations.md, "Tracing").
   */
  spanProcessor?: SpanProcessor;
  /**
   * Reads and validates the config again for {@link RunningGateway.reload}, knowing the grant
   * types the validators serve now (the builder passes one that re-reads the config file).
   */
  reloadConfig?: (extraGrantTypes: readonly string[]) => Promise<LoadedConfig>;
  /**
   * This gateway's place among the processes `tessera start --processes N` runs on one port
   * (docs/operations.md, "Several processes"): its management listener takes `management.port`
   * plus the index, and its metrics, audit events and `tessera listening` line carry the index.
   */
  process?: ProcessSlot;
}

/** One of the front-end processes sharing a port: `index` counts from 0 to `count - 1`. */
export interface ProcessSlot {
  readonly index: number;
  readonly count: number;
}

export interface RunningGateway {
  /** Base URL the gateway listens on, e.g. http://127.0.0.1:5000 */
  readonly url: string;
  readonly port: number;
  /** Base URL of the management listener (`/metrics`); `undefined` when metrics are on the public port. */
  readonly managementUrl: string | undefined;
  /** The gateway's audit events: `emit` for what happens outside a request (a key rotation). */
  readonly events: AuditEvents;
  /** The gateway's metrics (the signing key's age source, rotations). */
  readonly metrics: GatewayMetrics;
  /** The grant types served right now (changes when validators reload). */
  readonly grantTypes: readonly string[];
  /** Resolves after the next validator reload attempt: `true` when it took effect. */
  nextValidatorReload(): Promise<boolean>;
  /** The config in service (changes on {@link RunningGateway.reload}). */
  readonly config: LoadedConfig;
  /**
   * Reads the config again and applies it without a restart (docs/operations.md, "Reload"):
   * clients, scopes, resources, users, throttles and proxies change, state (sessions, refresh
   * tokens, counters) stays, the TLS files are read again. A config that does not validate is
   * refused and the running one stays. `tessera start` calls it on SIGHUP.
   */
  reload(): Promise<ReloadResult>;
  /**
   * Reads the signing keys again (docs/operations.md, "Signing keys and rotation"): the key files,
   * or with `config` the key files it lists; or the store for store-kept keys. A key file that
   * cannot be used keeps the running keys (logged, and `ok: false`). `tessera start` calls it on
   * SIGHUP.
   */
  reloadKeys(config?: LoadedConfig): Promise<KeyReloadResult>;
  /**
   * Graceful stop (docs/operations.md, "Signals and shutdown"): `/readyz` turns 503 at once and
   * requests are still served for `drainSeconds` (default 0: embedding code and tests stop at
   * once; `tessera start` passes the config's `shutdown.drainSeconds` on SIGTERM); then the
   * listener closes, requests in flight finish within `shutdown.requestTimeoutSeconds`, and the
   * pool and the store close.
   */
  stop(options?: StopOptions): Promise<void>;
}

export interface StopOptions {
  readonly drainSeconds?: number;
}
