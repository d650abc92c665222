import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';

/** A pino line as the gateway writes it. */
export type LogLine = Record<string, unknown> & { msg: string; level: number };

/**
 * A logger whose JSON lines a test reads back: parsed (`logs`) to find a line, raw (`rawLog`) to
 * check that no secret was written in any form.
 */
export function jsonLogSink(level = 'info'): { logger: Logger; logs: LogLine[]; rawLog: string[] } {
  const logs: LogLine[] = [];
  const rawLog: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) {
        if (line.length === 0) continue;
        rawLog.push(line);
        logs.push(JSON.parse(line) as LogLine);
      }
      done();
    },
  });
  return { logger: pino({ level }, sink), logs, rawLog };
}
