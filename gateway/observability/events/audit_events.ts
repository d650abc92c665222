import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { categoryOf, type AuditEvent, type AuditEventInput } from './audit_event.js';

/** Where events go; a sink never blocks and never throws into the emitter. */
export interface AuditEventSink {
  /** Names the sink in the dropped-events metric and in log lines. */
  readonly name: string;
  /** Takes one batch of events; a sink that cannot keep up drops them and calls `dropped`. */
  write(events: readonly AuditEvent[]): void;
  close(): Promise<void>;
}

/** Embedding code's hook (`onEvent` on the builder); called after the request was answered. */
export type AuditEventHook = (event: AuditEvent) => void;

export interface AuditEventsOptions {
  readonly sinks: readonly AuditEventSink[];
  readonly hooks: readonly AuditEventHook[];
  readonly logger: Logger;
  /** Off: `emit` does nothing. The sinks may be added after construction (they report drops to it). */
  readonly enabled: boolean;
  /** Events waiting for the next flush beyond which new ones are dropped. */
  readonly maxQueued?: number;
  /** The process index stamped on every event when several processes share a port. */
  readonly processIndex?: number | undefined;
}

/**
 * The gateway's one audit-event emitter (docs/operations.md, "Events"). `emit` only queues: the
 * sinks and hooks run on a later turn of the event loop, so a request's answer is never held up
 * by them, and a sink that falls behind drops events (counted, with one warning) rather than
 * stalling a token response. With no sink and no hook it is disabled and `emit` costs one check.
 */
export class AuditEvents {
  readonly enabled: boolean;
  private queue: AuditEvent[] = [];
  private scheduled = false;
  private readonly maxQueued: number;
  private readonly dropped = new Map<string, number>();
  /** Sinks (or the queue) that dropped since their last warning: one warning per episode. */
  private readonly warned = new Set<string>();

  constructor(private readonly options: AuditEventsOptions) {
    this.enabled = options.enabled;
    this.maxQueued = options.maxQueued ?? 10_000;
  }

  /** Queues one event; never waits and never throws. */
  emit(input: AuditEventInput): void {
    if (!this.enabled) return;
    if (this.queue.length >= this.maxQueued) {
      this.countDropped('queue', 1);
      return;
    }
    this.queue.push(completed(input, this.options.processIndex));
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  /** Events dropped so far, by sink (`queue`: before any sink saw them). */
  droppedCounts(): ReadonlyMap<string, number> {
    return this.dropped;
  }

  /** For sinks: `count` events they could not take. */
  readonly countDropped = (sink: string, count: number): void => {
    this.dropped.set(sink, (this.dropped.get(sink) ?? 0) + count);
    if (this.warned.has(sink)) return;
    this.warned.add(sink);
    this.options.logger.warn({ sink, dropped: count }, 'audit events dropped: the sink is not keeping up or not reachable');
  };

  /** For sinks: they take events again; the next drop warns again. */
  readonly recovered = (sink: string): void => {
    if (!this.warned.delete(sink)) return;
    this.options.logger.info({ sink, droppedSoFar: this.dropped.get(sink) ?? 0 }, 'audit event sink is taking events again');
  };

  /** Delivers what is queued, then closes the sinks (at stop). */
  async close(): Promise<void> {
    this.flush();
    await Promise.all(this.options.sinks.map((sink) => sink.close().catch(() => {})));
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    this.recovered('queue');
    for (const sink of this.options.sinks) sink.write(batch);
    for (const hook of this.options.hooks) {
      for (const event of batch) {
        try {
          hook(event);
        } catch (err) {
          this.options.logger.warn({ err, event: event.name }, 'onEvent hook threw');
        }
      }
    }
  };
}

/**
 * The event with its time, id and category, and without the members its input left undefined
 * (docs/operations.md, "Events": members that do not apply are absent). Member by member, not a
 * walk over `Object.entries` (an array per member, measured in
 * docs/decisions/0012-audit-events-cost.md).
 */
function completed(input: AuditEventInput, processIndex: number | undefined): AuditEvent {
  const event: Mutable<AuditEvent> = {
    time: isoNow(),
    id: randomUUID(),
    name: input.name,
    category: categoryOf(input.name),
    outcome: input.outcome,
  };
  if (input.clientId !== undefined) event.clientId = input.clientId;
  if (input.subject !== undefined) event.subject = input.subject;
  if (input.grantType !== undefined) event.grantType = input.grantType;
  if (input.jti !== undefined) event.jti = input.jti;
  if (input.remoteAddress !== undefined) event.remoteAddress = input.remoteAddress;
  if (input.endpoint !== undefined) event.endpoint = input.endpoint;
  if (input.username !== undefined) event.username = input.username;
  if (input.error !== undefined) event.error = input.error;
  if (input.details !== undefined) event.details = input.details;
  if (processIndex !== undefined) event.process = processIndex;
  return event;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** The millisecond whose ISO 8601 text {@link isoNow} last made: many events share one. */
let isoMs = -1;
let isoText = '';

/**
 * Now in ISO 8601, UTC, to the millisecond; formatted once per millisecond, not once per event
 * (`toISOString` takes about 1.3 µs, longer than the rest of an event's fields together).
 */
function isoNow(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    isoText = new Date(ms).toISOString();
  }
  return isoText;
}
