import { createWriteStream, type WriteStream } from 'node:fs';
import type { AuditEvent } from './audit_event.js';
import { auditEventJson } from './audit_event_json.js';
import type { AuditEventSink } from './audit_events.js';

/** Bytes written and not yet flushed beyond which events are dropped rather than buffered without end. */
const maxPendingBytes = 8 * 1024 * 1024;

/**
 * Lines are collected in a buffer and written at most every {@link writeEveryMs}, or when the
 * buffer ({@link bufferBytes}) is full: one `write` per batch of the emitter's turns instead of
 * one per turn (each costs the gateway thread a few microseconds of libuv request set-up). Each line
 * is encoded into the buffer as it comes, not appended to a string that is flattened and encoded
 * at the write (measured: docs/decisions/0012-audit-events-cost.md).
 */
const writeEveryMs = 50;
const bufferBytes = 64 * 1024;

/**
 * Audit events as JSON lines (one object per line) on a file or on stdout, written through
 * libuv's thread pool (an `fs` write stream), never synchronously: a slow disk or a full pipe
 * makes this sink drop events, not the event loop wait. The application log (pino) is not here.
 */
export class JsonLinesSink implements AuditEventSink {
  private broken = false;
  private buffer = Buffer.allocUnsafeSlow(bufferBytes);
  /** Bytes of {@link buffer} holding lines not yet written. */
  private used = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly name: string,
    private readonly stream: WriteStream,
    private readonly dropped: (sink: string, count: number) => void,
    private readonly recovered: (sink: string) => void,
  ) {
    stream.on('error', () => {
      // A closed pipe or a vanished disk: everything from now on is dropped (and counted).
      this.broken = true;
    });
  }

  /** A sink on `file` (appended to, created with mode 0600: events name users) or on stdout (`file` undefined). */
  static open(file: string | undefined, dropped: (sink: string, count: number) => void, recovered: (sink: string) => void): JsonLinesSink {
    const stream =
      file === undefined ? createWriteStream('', { fd: 1, autoClose: false }) : createWriteStream(file, { flags: 'a', mode: 0o600 });
    return new JsonLinesSink(file === undefined ? 'stdout' : 'file', stream, dropped, recovered);
  }

  write(events: readonly AuditEvent[]): void {
    if (this.broken || this.stream.writableLength > maxPendingBytes) {
      this.dropped(this.name, events.length);
      return;
    }
    this.recovered(this.name);
    for (const event of events) this.append(auditEventJson(event));
    if (this.used > 0 && this.timer === undefined) {
      this.timer = setTimeout(this.writePending, writeEveryMs);
      this.timer.unref();
    }
  }

  private append(line: string): void {
    // A UTF-16 code unit takes at most 3 bytes of UTF-8 (a surrogate pair 4 for two), + the newline.
    const most = line.length * 3 + 1;
    if (this.used + most > this.buffer.length) {
      this.writePending();
      if (most > this.buffer.length) {
        this.stream.write(`${line}\n`);
        return;
      }
    }
    this.used += this.buffer.write(line, this.used);
    this.buffer[this.used++] = 0x0a;
  }

  private readonly writePending = (): void => {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.used === 0) return;
    const lines = this.buffer.subarray(0, this.used);
    // The stream holds on to the bytes until libuv has written them: the next lines go to a new buffer.
    this.buffer = Buffer.allocUnsafeSlow(bufferBytes);
    this.used = 0;
    this.stream.write(lines);
  };

  close(): Promise<void> {
    this.writePending();
    return new Promise((resolve) => {
      if (this.broken) {
        resolve();
        return;
      }
      // fd 1 stays open (autoClose: false); a file is flushed and closed.
      this.stream.end(() => resolve());
    });
  }
}
