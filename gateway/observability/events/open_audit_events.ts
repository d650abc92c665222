import type { Logger } from 'pino';
import type { LoadedConfig } from '../../config/load.js';
import { AuditEvents, type AuditEventHook, type AuditEventSink } from './audit_events.js';
import { JsonLinesSink } from './json_lines_sink.js';
import { RedisStreamSink } from './redis_stream_sink.js';

/**
 * The audit events of one gateway, with the sinks its config names (`events`, docs/configuration.md)
 * and the embedding code's hooks. Disabled (free) when there are neither.
 */
export async function openAuditEvents(
  config: LoadedConfig,
  hooks: readonly AuditEventHook[],
  logger: Logger,
  processIndex?: number,
): Promise<AuditEvents> {
  const sinks: AuditEventSink[] = [];
  const events = new AuditEvents({
    sinks,
    hooks,
    logger,
    processIndex,
    enabled: config.events.sink !== 'none' || config.events.redisStream !== undefined || hooks.length > 0,
  });
  const { sink, file, redisStream } = config.events;
  if (sink === 'stdout') sinks.push(JsonLinesSink.open(undefined, events.countDropped, events.recovered));
  if (sink === 'file') sinks.push(JsonLinesSink.open(file, events.countDropped, events.recovered));
  if (redisStream !== undefined) {
    const url = redisStream.url ?? (config.store.type === 'redis' ? config.store.url : undefined);
    // The config check requires a URL unless the store is one Redis.
    if (url === undefined) throw new Error('events.redisStream.url is required');
    const stream = new RedisStreamSink({ url, key: redisStream.key, maxLen: redisStream.maxLen }, events.countDropped, events.recovered);
    await stream.connect();
    sinks.push(stream);
  }
  return events;
}
