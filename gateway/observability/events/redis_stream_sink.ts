import { Redis } from 'ioredis';
import type { AuditEvent } from './audit_event.js';
import { auditEventJson } from './audit_event_json.js';
import type { AuditEventSink } from './audit_events.js';

export interface RedisStreamOptions {
  readonly url: string;
  readonly key: string;
  /** Approximate length the stream is trimmed to (`XADD … MAXLEN ~ N`). */
  readonly maxLen: number;
}

/** Pipelines of XADDs in flight beyond which events are dropped: Redis is not keeping up. */
const maxBatchesInFlight = 8;

/**
 * Audit events appended to a Redis Stream, one entry per event (`name` and the event as JSON in
 * `event`), for consumers that read with `XREAD`/`XREADGROUP` (docs/operations.md, "Events").
 * Its own connection, apart from the store's: a slow consumer-facing stream never delays a grant's
 * store call. Never queues while Redis is unreachable: those events are dropped and counted.
 */
export class RedisStreamSink implements AuditEventSink {
  readonly name = 'redis';
  private readonly redis: Redis;
  private inFlight = 0;
  private readonly maxLen: string;

  constructor(
    private readonly options: RedisStreamOptions,
    private readonly dropped: (sink: string, count: number) => void,
    private readonly recovered: (sink: string) => void,
  ) {
    this.maxLen = String(options.maxLen);
    this.redis = new Redis(options.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 2000,
      connectionName: 'tessera-events',
      retryStrategy: (attempt) => Math.min(2000, attempt * 100),
    });
    // Without a listener ioredis prints every connection error; a failure shows as dropped events.
    this.redis.on('error', () => {});
  }

  /** Connects; a Redis that is not there yet is not fatal: events are dropped until it is. */
  async connect(): Promise<void> {
    await this.redis.connect().catch(() => {});
  }

  write(events: readonly AuditEvent[]): void {
    if (this.redis.status !== 'ready' || this.inFlight >= maxBatchesInFlight) {
      this.dropped(this.name, events.length);
      return;
    }
    const pipeline = this.redis.pipeline();
    for (const event of events) {
      pipeline.xadd(this.options.key, 'MAXLEN', '~', this.maxLen, '*', 'name', event.name, 'event', auditEventJson(event));
    }
    this.inFlight++;
    pipeline.exec().then(
      (replies) => {
        this.inFlight--;
        const failed = replies?.filter(([err]) => err !== null).length ?? events.length;
        if (failed > 0) this.dropped(this.name, failed);
        else this.recovered(this.name);
      },
      () => {
        this.inFlight--;
        this.dropped(this.name, events.length);
      },
    );
  }

  async close(): Promise<void> {
    // Lets appends in flight finish (QUIT waits for their replies), then closes.
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
