/**
 * Tessera's embedding API: start a gateway from code (`createTessera`), with the config types it
 * takes. Validator authors import from `'tessera/validator'` (validator.ts), which loads no HTTP
 * server; the validator API is re-exported here too, so `import … from 'tessera'` keeps working.
 */
export * from './validator.js';
export { createTessera, TesseraBuilder } from './gateway/start/service_builder.js';
export type { RunningGateway } from './gateway/start/server.js';
export type { KeyReloadResult } from './gateway/keys/key_ring.js';
export type { AuditEvent, AuditEventName, AuditEventCategory } from './gateway/observability/events/audit_event.js';
export type { TesseraConfig } from './gateway/config/schema.js';
export type { ClientConfig, UserConfig } from './core/worker_config.js';
